package discord

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

func TestHistoryPages(t *testing.T) {
	t.Parallel()
	// Channel 5 holds messages 11..13; 12 is the bot's own (left out).
	// Pages come newest first, like Discord's.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/channels/5/messages", r.URL.Path)
		after, _ := strconv.Atoi(r.URL.Query().Get("after"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var page []map[string]any
		for id := max(after+1, 11); id <= 13 && len(page) < limit; id++ {
			author := "7"
			if id == 12 {
				author = "999"
			}
			page = append([]map[string]any{{"id": strconv.Itoa(id), "channel_id": "5", "content": "m",
				"author": map[string]any{"id": author, "username": "u"}, "attachments": []any{}}}, page...)
		}
		_ = json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(srv.Close)
	ch := New(Options{APIBaseURL: srv.URL})
	acct := channels.Account{Settings: []byte(`{"application_id":"999"}`), Credentials: []byte(`{"bot_token":"t"}`)}
	conv := envelope.Conversation{ID: "5", Type: envelope.ConversationChannel}
	ids := func(msgs []envelope.Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.SourceMessageID)
		}
		return out
	}

	// A full page names its newest id, even a message left out.
	msgs, next, err := ch.History(context.Background(), acct, conv, "10", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"11"}, ids(msgs))
	require.Equal(t, "12", next)
	// A short page reached the channel's newest message.
	msgs, next, err = ch.History(context.Background(), acct, conv, next, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"13"}, ids(msgs))
	require.Empty(t, next)
	msgs, next, err = ch.History(context.Background(), acct, conv, "13", 2)
	require.NoError(t, err)
	require.Empty(t, msgs)
	require.Empty(t, next)
}
