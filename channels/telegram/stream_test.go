package telegram

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

// TestStreamDraftThenMessage: in a private chat a stream is a draft
// (sendMessageDraft, the same draft_id each time, the whole text so far)
// and ends with sendMessage of the complete text, whose id is the
// message's; a resumed stream goes on drafting. Groups do not stream.
func TestStreamDraftThenMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := channelstest.NewFakeTelegram(t)
	out, err := New(Options{APIBaseURL: fake.URL, APIBasePolicy: channels.APIBasePolicy{AllowHTTP: true}}).NewOutbound(channels.Account{
		ID: uuid.New(), TenantID: uuid.New(), Credentials: json.RawMessage(`{"bot_token":"123:abc"}`)})
	require.NoError(t, err)
	st := out.(channels.Streamer)
	require.False(t, st.Streams(&channels.OutboundMessage{ConversationID: "-1001234"}), "a group")
	require.False(t, st.Streams(&channels.OutboundMessage{ConversationID: "@channel"}))
	msg := &channels.OutboundMessage{MessageID: uuid.New(), ConversationID: "4242", Text: "Hel"}
	require.True(t, st.Streams(msg))

	res, err := st.StreamStart(ctx, msg)
	require.NoError(t, err)
	require.Contains(t, res.ProviderMessageID, "draft:")
	msg.EditProviderMessageID = res.ProviderMessageID
	msg.Text = "Hello"
	require.NoError(t, st.StreamAppend(ctx, msg, channels.StreamShown{Text: "Hel", Calls: 1}))
	msg.Text = "Hello, wor"
	require.NoError(t, st.StreamAppend(ctx, msg, channels.StreamShown{Lost: true}), "a draft carries its whole text")
	msg.Text = "Hello, world."
	fin, err := st.StreamStop(ctx, msg, channels.StreamShown{Text: "Hello, wor", Calls: 3})
	require.NoError(t, err)
	require.NotContains(t, fin.ProviderMessageID, "draft")

	drafts := fake.Calls("sendMessageDraft")
	require.Len(t, drafts, 3)
	for i, want := range []string{"Hel", "Hello", "Hello, wor"} {
		require.Equal(t, want, drafts[i].Body["text"])
		require.Equal(t, drafts[0].Body["draft_id"], drafts[i].Body["draft_id"], "one draft")
		require.NotZero(t, drafts[i].Body["draft_id"])
	}
	sent := fake.Calls("sendMessage")
	require.Len(t, sent, 1)
	require.Equal(t, "Hello, world.", sent[0].Body["text"])
}
