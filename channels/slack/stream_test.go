package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func newStreamer(t *testing.T, fake *channelstest.FakeSlack) channels.Streamer {
	t.Helper()
	out, err := New(Options{APIBaseURL: fake.URL, APIBasePolicy: channels.APIBasePolicy{AllowHTTP: true}}).NewOutbound(channels.Account{
		ID: uuid.New(), TenantID: uuid.New(), Credentials: json.RawMessage(`{"bot_token":"` + channelstest.StaticBotToken + `"}`)})
	require.NoError(t, err)
	return out.(channels.Streamer)
}

// TestStreamsInDMs: direct messages stream natively, channels do not
// (Slack needs the recipient there, which a reply does not name).
func TestStreamsInDMs(t *testing.T) {
	t.Parallel()
	st := newStreamer(t, channelstest.NewFakeSlack(t, false, 0, nil))
	require.True(t, st.Streams(&channels.OutboundMessage{ConversationID: "D0123"}))
	require.False(t, st.Streams(&channels.OutboundMessage{ConversationID: "C0123"}))
	require.False(t, st.Streams(&channels.OutboundMessage{ConversationID: "G0123"}))
}

// TestStreamStartAppendStop: a stream opened in a DM thread, grown by
// appends of what each text adds, and stopped with the rest, shows
// exactly the final text at the fake, which checks each method's
// required arguments.
func TestStreamStartAppendStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	st := newStreamer(t, fake)
	msg := &channels.OutboundMessage{ConversationID: "D0123", ThreadID: "1690000000.000001", Text: "Hel"}
	res, err := st.StreamStart(ctx, msg)
	require.NoError(t, err)
	msg.EditProviderMessageID = res.ProviderMessageID
	shown := channels.StreamShown{Text: "Hel", Calls: 1}
	for _, text := range []string{"Hello", "Hello", "Hello, wor"} {
		msg.Text = text
		require.NoError(t, st.StreamAppend(ctx, msg, shown))
		shown = channels.StreamShown{Text: text, Calls: shown.Calls + 1}
	}
	msg.Text = "Hello, world."
	fin, err := st.StreamStop(ctx, msg, shown)
	require.NoError(t, err)
	require.Equal(t, res.ProviderMessageID, fin.ProviderMessageID)
	s := fake.Stream(res.ProviderMessageID)
	require.Equal(t, &channelstest.SlackStream{Channel: "D0123", ThreadTS: "1690000000.000001", Text: "Hello, world.",
		Appends: 2, Stopped: true}, s, "an append with nothing new is not sent")
}

// TestStreamLost: a stream whose shown text is not known (resumed by
// another worker) cannot be appended to (ErrStreamLost, permanent); its
// stop ends the stream and updates the message to the final text, and a
// second chat.stopStream (a retried final call) only updates it.
func TestStreamLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	st := newStreamer(t, fake)
	msg := &channels.OutboundMessage{ConversationID: "D0123", Text: "partial "}
	res, err := st.StreamStart(ctx, msg)
	require.NoError(t, err)
	msg.EditProviderMessageID, msg.Text = res.ProviderMessageID, "partial and more"
	err = st.StreamAppend(ctx, msg, channels.StreamShown{Lost: true})
	require.ErrorIs(t, err, channels.ErrStreamLost)
	require.Equal(t, "permanent", channelstest.ErrorKind(err))
	for range 2 {
		_, err = st.StreamStop(ctx, msg, channels.StreamShown{Lost: true})
		require.NoError(t, err)
		s := fake.Stream(res.ProviderMessageID)
		require.True(t, s.Stopped && s.Updated)
		require.Equal(t, "partial and more", s.Text)
	}
}

// TestStreamRateLimited: chat.appendStream is Tier 4 (100 a minute): the
// fake answers the 101st call of a minute 429 with Retry-After, which
// the adapter returns as RateLimitedError.
func TestStreamRateLimited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	st := newStreamer(t, fake)
	msg := &channels.OutboundMessage{ConversationID: "D0123", Text: "0"}
	res, err := st.StreamStart(ctx, msg)
	require.NoError(t, err)
	msg.EditProviderMessageID = res.ProviderMessageID
	var b strings.Builder
	b.WriteString("0")
	for i := range 101 {
		shown := channels.StreamShown{Text: b.String(), Calls: i + 1}
		fmt.Fprint(&b, " ", i)
		msg.Text = b.String()
		err = st.StreamAppend(ctx, msg, shown)
		if i < 100 {
			require.NoError(t, err, i)
		}
	}
	require.Equal(t, "rate_limited", channelstest.ErrorKind(err))
	var rl *channels.RateLimitedError
	require.ErrorAs(t, err, &rl)
	require.Positive(t, rl.RetryAfter)
	require.Equal(t, 1, fake.Limited())
}
