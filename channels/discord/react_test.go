package discord

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

// TestParseReactionEvent: MESSAGE_REACTION_ADD and _REMOVE become
// reaction envelopes; a custom emoji is name:id; the dedup key names the
// message, user, emoji, direction and Gateway event, so a replay is a
// duplicate and a later add is not; the bot's own reactions are left out.
func TestParseReactionEvent(t *testing.T) {
	t.Parallel()
	add := []byte(`{"user_id":"53908232506183680","channel_id":"881207955029110858","message_id":"1240183690000000000","guild_id":"613425648685547541",
		"member":{"user":{"id":"53908232506183680","username":"ada","global_name":"Ada L."}},"emoji":{"id":null,"name":"🔥"},"burst":false,"type":0}`)
	p, err := ParseReactionEvent(EventReactionAdd, add, "1", "sess:42")
	require.NoError(t, err)
	require.Len(t, p.Messages, 1)
	m := p.Messages[0]
	require.Equal(t, envelope.KindReaction, m.Kind)
	require.Equal(t, &envelope.Reaction{Emoji: "🔥", Added: true, MessageID: "1240183690000000000"}, m.Reaction)
	require.Equal(t, envelope.Conversation{ID: "881207955029110858", Type: envelope.ConversationChannel}, m.Conversation)
	require.Equal(t, envelope.Sender{ID: "53908232506183680", DisplayName: "Ada L."}, m.Sender)
	require.Equal(t, "1240183690000000000:reaction:53908232506183680:🔥:add:sess:42", m.SourceMessageID)

	again, err := ParseReactionEvent(EventReactionAdd, add, "1", "sess:42")
	require.NoError(t, err)
	require.Equal(t, m.SourceMessageID, again.Messages[0].SourceMessageID, "a resumed session's replay")
	later, err := ParseReactionEvent(EventReactionAdd, add, "1", "sess:57")
	require.NoError(t, err)
	require.NotEqual(t, m.SourceMessageID, later.Messages[0].SourceMessageID, "the same reaction added again later")

	rm, err := ParseReactionEvent(EventReactionRemove, []byte(`{"user_id":"7","channel_id":"2","message_id":"3","emoji":{"id":"41771983429993937","name":"LUL"}}`), "1", "s:1")
	require.NoError(t, err)
	require.Equal(t, &envelope.Reaction{Emoji: "LUL:41771983429993937", MessageID: "3"}, rm.Messages[0].Reaction)
	require.Equal(t, envelope.ConversationDM, rm.Messages[0].Conversation.Type)

	own, err := ParseReactionEvent(EventReactionAdd, []byte(`{"user_id":"1","channel_id":"2","message_id":"3","emoji":{"name":"👍"}}`), "1", "s:2")
	require.NoError(t, err)
	require.Empty(t, own.Messages)
}

// TestReact: a reaction is PUT (remove: DELETE)
// /channels/{channel}/messages/{message}/reactions/{emoji}/@me with the
// emoji URL-encoded; a custom emoji is sent as name:id.
func TestReact(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r := newTestOutbound(t, srv.URL, nil).(channels.Reactor)
	msg := textMessage("")
	msg.Reaction = &channels.OutboundReaction{MessageID: "1240183690000000000", Emoji: "👍"}
	res, err := r.React(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, "1240183690000000000", res.ProviderMessageID)
	msg.Reaction = &channels.OutboundReaction{MessageID: "1240183690000000000", Emoji: "<:LUL:41771983429993937>", Remove: true}
	_, err = r.React(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, []string{
		"PUT /channels/" + testChannelID + "/messages/1240183690000000000/reactions/%F0%9F%91%8D/@me Bot " + testBotToken,
		"DELETE /channels/" + testChannelID + "/messages/1240183690000000000/reactions/LUL:41771983429993937/@me Bot " + testBotToken,
	}, got)

	msg.Reaction.MessageID = "x"
	_, err = r.React(context.Background(), msg)
	require.Equal(t, "permanent", channelstest.ErrorKind(err))
}
