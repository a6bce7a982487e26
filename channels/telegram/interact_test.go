package telegram

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

// TestCallbackQueryAnsweredAfterCommit: a button press parses to one
// interaction whose acknowledgement, run after the commit, calls
// answerCallbackQuery with the query's id so the client stops spinning.
func TestCallbackQueryAnsweredAfterCommit(t *testing.T) {
	t.Parallel()
	fake := newFakeBotAPI(t, channelstest.Answer(200, `{"ok":true,"result":true}`))
	in, err := New(Options{APIBaseURL: fake.srv.URL}).NewInbound(channels.Account{
		Credentials: json.RawMessage(`{"bot_token":"` + testBotToken + `"}`), WebhookSecret: testSecret,
	})
	require.NoError(t, err)
	got, err := in.Parse(context.Background(), postRequest(channelstest.ReadFixture(t, "callback_query.json")))
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	require.Equal(t, envelope.KindInteraction, got.Messages[0].Kind)
	require.Empty(t, fake.recorded(), "nothing is answered before the commit")
	require.NotNil(t, got.AfterCommit)
	require.NoError(t, got.AfterCommit(context.Background()))
	calls := fake.recorded()
	require.Len(t, calls, 1)
	require.Equal(t, "answerCallbackQuery", calls[0].Method)
	require.JSONEq(t, `{"callback_query_id":"4382bfdwdsb323b2d9"}`, string(calls[0].Raw))

	// Other updates have nothing to acknowledge.
	got, err = in.Parse(context.Background(), postRequest(channelstest.ReadFixture(t, "message_private_text.json")))
	require.NoError(t, err)
	require.Nil(t, got.AfterCommit)
}

// TestParseMessageReaction: a message_reaction update gives one reaction
// envelope per emoji added or removed, each with its own dedup key.
func TestParseMessageReaction(t *testing.T) {
	t.Parallel()
	got, err := newTestInbound(t).Parse(context.Background(), postRequest(channelstest.ReadFixture(t, "message_reaction.json")))
	require.NoError(t, err)
	require.Len(t, got.Messages, 3)
	var ids []string
	var reactions []envelope.Reaction
	for _, m := range got.Messages {
		require.Equal(t, envelope.KindReaction, m.Kind)
		require.Equal(t, envelope.Conversation{ID: "-1001234567890", Type: envelope.ConversationGroup, Title: "MIO Support"}, m.Conversation)
		require.Equal(t, "1111111111", m.Sender.ID)
		require.Equal(t, time.Unix(1717176000, 0).UTC(), m.SentAt)
		ids = append(ids, m.SourceMessageID)
		reactions = append(reactions, *m.Reaction)
	}
	require.Equal(t, []string{"870105640", "870105640:1", "870105640:2"}, ids)
	require.Equal(t, []envelope.Reaction{
		{Emoji: "🔥", Added: true, MessageID: "91"},
		{Emoji: "5368324170671202286", Added: true, MessageID: "91"},
		{Emoji: "👍", MessageID: "91"},
	}, reactions)
}

// TestReact: a reaction is setMessageReaction with one emoji; removing it
// sends an empty list.
func TestReact(t *testing.T) {
	t.Parallel()
	fake := newFakeBotAPI(t, channelstest.Answer(200, `{"ok":true,"result":true}`))
	out := newTestOutbound(t, fake.srv.URL, nil)
	r, ok := out.(channels.Reactor)
	require.True(t, ok)
	msg := textMessage("")
	msg.Reaction = &channels.OutboundReaction{MessageID: "91", Emoji: "👍"}
	res, err := r.React(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, "91", res.ProviderMessageID)
	msg.Reaction.Remove = true
	_, err = r.React(context.Background(), msg)
	require.NoError(t, err)
	calls := fake.recorded()
	require.Len(t, calls, 2)
	require.Equal(t, "setMessageReaction", calls[0].Method)
	require.JSONEq(t, `{"chat_id":-1001234567890,"message_id":91,"reaction":[{"type":"emoji","emoji":"👍"}]}`, string(calls[0].Raw))
	require.JSONEq(t, `{"chat_id":-1001234567890,"message_id":91,"reaction":[]}`, string(calls[1].Raw))

	msg.Reaction.MessageID = "not-a-number"
	_, err = r.React(context.Background(), msg)
	require.Equal(t, "permanent", channelstest.ErrorKind(err))
}

// TestCallbackDataLimit: an action id and value over Telegram's 64 bytes
// of callback_data is refused with an error naming the limit.
func TestCallbackDataLimit(t *testing.T) {
	t.Parallel()
	msg := textMessage("pick")
	msg.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{
		{Label: "Go", ActionID: "approve", Value: strings.Repeat("x", 57)},
	}}
	_, _, err := render(msg)
	require.ErrorContains(t, err, "65 bytes of callback_data, Telegram allows 64")
	msg.RichContent.Buttons[0].Value = strings.Repeat("x", 56)
	_, kb, err := render(msg)
	require.NoError(t, err)
	require.Equal(t, "approve:"+strings.Repeat("x", 56), kb.InlineKeyboard[0][0].CallbackData)
}
