package slack

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

// TestParseBlockActions: a signed, form-encoded block_actions payload is
// one interaction envelope with the button's action id and value, the
// message it was attached to and the payload JSON as raw; its dedup key
// is the trigger_id.
func TestParseBlockActions(t *testing.T) {
	t.Parallel()
	var form []byte
	for _, fx := range channelstest.ReadFixtures(t, "testdata") {
		if fx.Name == "block_actions.form" {
			form = fx.Body
		}
	}
	require.NotNil(t, form)
	in := newTestInbound(t, nil, "")
	req := signedRequest(form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	require.NoError(t, in.Verify(context.Background(), req))
	got, err := in.Parse(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	m := got.Messages[0]
	q, err := url.ParseQuery(string(form))
	require.NoError(t, err)
	require.JSONEq(t, q.Get("payload"), string(m.Raw))
	m.Raw = nil
	require.Equal(t, envelope.Message{
		Kind: envelope.KindInteraction, ChannelType: envelope.ChannelSlack,
		Interaction:     &envelope.Interaction{ActionID: "approve", Value: "run-42", MessageID: "1717171717.000200"},
		SourceMessageID: "12466734323.1395872398.97bb5b6e67a7b19ef5f5f7e7e7b0aac2",
		Conversation:    envelope.Conversation{ID: "C0CA5", Type: envelope.ConversationChannel, Title: "deploys"},
		ReplyToSourceID: "1717171717.000200",
		Sender:          envelope.Sender{ID: "U0CA5", DisplayName: "ada"},
		Text:            "run-42", Attachments: []envelope.Attachment{},
		SentAt: time.Unix(1717171720, 123456000).UTC(),
	}, m)
}

// TestParseOtherInteractionPayloads: payload types other than
// block_actions are answered 200 and stored as nothing.
// TestParseStaticSelect: a choice in a static_select MIO rendered is an
// interaction of the select's action id, the chosen option's value in
// value and values.
func TestParseStaticSelect(t *testing.T) {
	t.Parallel()
	var form []byte
	for _, fx := range channelstest.ReadFixtures(t, "testdata") {
		if fx.Name == "block_actions_static_select.form" {
			form = fx.Body
		}
	}
	require.NotNil(t, form)
	req := signedRequest(form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	got, err := newTestInbound(t, nil, "").Parse(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	m := got.Messages[0]
	require.Equal(t, envelope.KindInteraction, m.Kind)
	require.Equal(t, &envelope.Interaction{ActionID: "region", Value: "eu-west", Values: []string{"eu-west"}, MessageID: "1717171717.000200"}, m.Interaction)
	require.Equal(t, "eu-west", m.Text)
	require.Equal(t, "12466734323.1395872398.5c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f", m.SourceMessageID)
}

func TestParseOtherInteractionPayloads(t *testing.T) {
	t.Parallel()
	req := signedRequest([]byte("payload=" + url.QueryEscape(`{"type":"view_submission","trigger_id":"t"}`)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	got, err := newTestInbound(t, nil, "").Parse(context.Background(), req)
	require.NoError(t, err)
	require.Empty(t, got.Messages)
	require.Len(t, got.Ignored, 1)
}

// TestParseReactionEvents: reaction_added and reaction_removed on a
// message are reaction envelopes keyed by event_id; on a file, nothing.
func TestParseReactionEvents(t *testing.T) {
	t.Parallel()
	event := func(ev string) string {
		return `{"type":"event_callback","event_id":"Ev2","team_id":"T1","event":` + ev + `}`
	}
	in := newTestInbound(t, nil, "")
	got, err := in.Parse(context.Background(), signedRequest(channelstest.ReadFixture(t, "reaction_added.json")))
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	m := got.Messages[0]
	require.Equal(t, envelope.KindReaction, m.Kind)
	require.Equal(t, "Ev0REACT01", m.SourceMessageID)
	require.Equal(t, &envelope.Reaction{Emoji: "thumbsup", Added: true, MessageID: "1717171717.000200"}, m.Reaction)
	require.Equal(t, envelope.Sender{ID: "U0CA5"}, m.Sender)

	removed := event(`{"type":"reaction_removed","user":"U1","reaction":"eyes","item":{"type":"message","channel":"D1","ts":"1.2"},"event_ts":"3.4"}`)
	got, err = in.Parse(context.Background(), signedRequest([]byte(removed)))
	require.NoError(t, err)
	require.Equal(t, &envelope.Reaction{Emoji: "eyes", MessageID: "1.2"}, got.Messages[0].Reaction)
	require.Equal(t, envelope.ConversationDM, got.Messages[0].Conversation.Type)

	onFile := event(`{"type":"reaction_added","user":"U1","reaction":"eyes","item":{"type":"file","file":"F1"}}`)
	got, err = in.Parse(context.Background(), signedRequest([]byte(onFile)))
	require.NoError(t, err)
	require.Empty(t, got.Messages)
}

// TestReact: reactions.add and reactions.remove with the emoji's name
// (colons dropped); already_reacted and no_reaction are successes.
func TestReact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, answer, method string
		remove               bool
		wantErr              string
	}{
		{name: "add", answer: `{"ok":true}`, method: "reactions.add"},
		{name: "add again", answer: `{"ok":false,"error":"already_reacted"}`, method: "reactions.add"},
		{name: "remove", answer: `{"ok":true}`, method: "reactions.remove", remove: true},
		{name: "remove again", answer: `{"ok":false,"error":"no_reaction"}`, method: "reactions.remove", remove: true},
		{name: "unknown emoji", answer: `{"ok":false,"error":"invalid_name"}`, method: "reactions.add", wantErr: "permanent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeWebAPI(t, channelstest.Answer(200, tc.answer))
			out := newTestOutbound(t, fake.srv.URL, nil)
			msg := &channels.OutboundMessage{ConversationID: "C0CA5",
				Reaction: &channels.OutboundReaction{MessageID: "1717171717.000200", Emoji: ":thumbsup:", Remove: tc.remove}}
			res, err := out.(channels.Reactor).React(context.Background(), msg)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			require.Equal(t, "/"+tc.method, calls[0].Path)
			require.JSONEq(t, `{"channel":"C0CA5","name":"thumbsup","timestamp":"1717171717.000200"}`, string(calls[0].Raw))
			if tc.wantErr != "" {
				require.Equal(t, tc.wantErr, channelstest.ErrorKind(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, "1717171717.000200", res.ProviderMessageID)
		})
	}
}
