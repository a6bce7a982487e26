package teams

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

// TestStreamPersonalChat: in a personal chat a stream is typing
// activities with a streaminfo entity (streaming, sequence 1 without a
// streamId, then the streamId Teams answered and the next sequence), each
// with the whole text so far, and a final message activity (streamType
// final) with the complete text; the fake, which refuses a sequence out
// of order or an update of a closed stream, shows exactly the final text.
// Channel conversations do not stream.
func TestStreamPersonalChat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	o, _ := newSender(t, fake)
	require.False(t, o.Streams(&channels.OutboundMessage{ConversationID: testConv}), "a channel")
	msg := &channels.OutboundMessage{ConversationID: "a:1personal", Text: "Hel"}
	require.True(t, o.Streams(msg))

	res, err := o.StreamStart(ctx, msg)
	require.NoError(t, err)
	msg.EditProviderMessageID = res.ProviderMessageID
	shown := channels.StreamShown{Text: "Hel", Calls: 1}
	for _, text := range []string{"Hello", "Hello, wor"} {
		msg.Text = text
		require.NoError(t, o.StreamAppend(ctx, msg, shown))
		shown = channels.StreamShown{Text: text, Calls: shown.Calls + 1}
	}
	msg.Text = "Hello, world."
	fin, err := o.StreamStop(ctx, msg, shown)
	require.NoError(t, err)
	require.NotEmpty(t, fin.ProviderMessageID)
	require.Equal(t, &channelstest.TeamsStream{Conversation: "a:1personal", Text: "Hello, world.", Sequence: 4, Final: true},
		fake.Stream(res.ProviderMessageID))

	calls := fake.Calls()
	require.Len(t, calls, 4)
	require.Equal(t, "typing", calls[0].Activity["type"])
	require.Equal(t, []any{map[string]any{"type": "streaminfo", "streamType": "streaming", "streamSequence": 1.0}}, calls[0].Activity["entities"])
	require.Equal(t, []any{map[string]any{"type": "streaminfo", "streamId": res.ProviderMessageID, "streamType": "streaming", "streamSequence": 3.0}},
		calls[2].Activity["entities"])
	require.Equal(t, "message", calls[3].Activity["type"])

	// An update after the final message is refused, permanently.
	require.Equal(t, "permanent", channelstest.ErrorKind(o.StreamAppend(ctx, msg, shown)))
}

// TestStreamLostSequence: a resumed stream, whose sequence is not known,
// is not updated (ErrStreamLost) and ends with its final message without
// a sequence.
func TestStreamLostSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	o, _ := newSender(t, fake)
	msg := &channels.OutboundMessage{ConversationID: "a:1personal", Text: "partial"}
	res, err := o.StreamStart(ctx, msg)
	require.NoError(t, err)
	msg.EditProviderMessageID, msg.Text = res.ProviderMessageID, "partial and more"
	require.ErrorIs(t, o.StreamAppend(ctx, msg, channels.StreamShown{Lost: true}), channels.ErrStreamLost)
	_, err = o.StreamStop(ctx, msg, channels.StreamShown{Lost: true})
	require.NoError(t, err)
	s := fake.Stream(res.ProviderMessageID)
	require.True(t, s.Final)
	require.Equal(t, "partial and more", s.Text)
}

// TestStreamFinalRetried: a final call whose answer was lost (Teams took
// the final message, the answer did not arrive) is retried; Teams answers
// the second final message 403, the stream being over, and the streamed
// message is updated in place instead: the retry succeeds with the
// message's id, and the message shows the final text once.
func TestStreamFinalRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	o, _ := newSender(t, fake)
	msg := &channels.OutboundMessage{ConversationID: "a:1personal", Text: "Hel"}
	res, err := o.StreamStart(ctx, msg)
	require.NoError(t, err)
	msg.EditProviderMessageID, msg.Text = res.ProviderMessageID, "Hello, world."
	shown := channels.StreamShown{Text: "Hel", Calls: 1}

	fake.LoseNextAnswer(1)
	_, err = o.StreamStop(ctx, msg, shown)
	require.Equal(t, "transient", channelstest.ErrorKind(err), "the answer was lost")
	fin, err := o.StreamStop(ctx, msg, shown)
	require.NoError(t, err, "the retry of the final call")
	require.Equal(t, res.ProviderMessageID, fin.ProviderMessageID, "the streamed message")
	require.Equal(t, &channelstest.TeamsStream{Conversation: "a:1personal", Text: "Hello, world.", Sequence: 2, Final: true},
		fake.Stream(res.ProviderMessageID))

	var finals, updates int
	for _, c := range fake.Calls() {
		switch {
		case c.Method == http.MethodPost && c.Activity["type"] == "message":
			finals++
		case c.Method == http.MethodPut:
			updates++
			require.Equal(t, "/v3/conversations/a:1personal/activities/"+res.ProviderMessageID, c.Path)
			require.Equal(t, "Hello, world.", c.Activity["text"])
			require.Nil(t, c.Activity["entities"], "an update, not a stream activity")
		}
	}
	require.Equal(t, 1, finals, "one final message")
	require.Equal(t, 1, updates, "the retry updated the message")
}

// TestStreamStoppedByTheUser: a stream the user stopped before its final
// message answers the final message 403; the streamed message is updated
// to the final text instead.
func TestStreamStoppedByTheUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	o, _ := newSender(t, fake)
	msg := &channels.OutboundMessage{ConversationID: "a:1personal", Text: "partial"}
	res, err := o.StreamStart(ctx, msg)
	require.NoError(t, err)
	fake.StopStream(res.ProviderMessageID)
	msg.EditProviderMessageID, msg.Text = res.ProviderMessageID, "partial and the rest."
	fin, err := o.StreamStop(ctx, msg, channels.StreamShown{Text: "partial", Calls: 1})
	require.NoError(t, err)
	require.Equal(t, res.ProviderMessageID, fin.ProviderMessageID)
	s := fake.Stream(res.ProviderMessageID)
	require.True(t, s.Stopped)
	require.Equal(t, "partial and the rest.", s.Text)
}
