package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

const testSecret = "s3cr3t_Token-for-MIO"

func newTestInbound(t testing.TB) channels.Inbound {
	t.Helper()
	in, err := New(Options{}).NewInbound(channels.Account{
		Credentials:   json.RawMessage(`{"bot_token":"123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"}`),
		WebhookSecret: testSecret,
	})
	require.NoError(t, err)
	return in
}

func postRequest(body []byte) *channels.Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(SecretTokenHeader, testSecret)
	return &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: time.Unix(1717180000, 0)}
}

func TestChannel(t *testing.T) {
	t.Parallel()
	ch := New(Options{})
	require.Equal(t, envelope.ChannelTelegram, ch.Type())
	require.Equal(t, channels.Capabilities{Edit: true, Threads: true, Attachments: true, Interactions: true, Reactions: true}, channels.CapabilitiesOf(ch))
	require.Equal(t, DefaultAPIBaseURL, ch.opts.APIBaseURL)
	require.NotNil(t, ch.opts.HTTPClient)
	require.Equal(t, "http://fake", New(Options{APIBaseURL: "http://fake/"}).opts.APIBaseURL)
}

func TestNewInbound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		acct    channels.Account
		wantErr bool
		want    Config
	}{
		{
			name: "secret only",
			acct: channels.Account{WebhookSecret: "abc"},
			want: Config{WebhookSecret: "abc"},
		},
		{
			name: "secret and bot token, empty settings object",
			acct: channels.Account{
				Settings:      json.RawMessage(`{}`),
				Credentials:   json.RawMessage(`{"bot_token":"123:abc"}`),
				WebhookSecret: "A-z_09",
			},
			want: Config{BotToken: "123:abc", WebhookSecret: "A-z_09"},
		},
		{
			name: "null settings and credentials",
			acct: channels.Account{Settings: json.RawMessage(`null`), Credentials: json.RawMessage(` null `), WebhookSecret: "x"},
			want: Config{WebhookSecret: "x"},
		},
		{
			name: "256 character secret",
			acct: channels.Account{WebhookSecret: strings.Repeat("a", 256)},
			want: Config{WebhookSecret: strings.Repeat("a", 256)},
		},
		{name: "missing secret", acct: channels.Account{}, wantErr: true},
		{name: "secret too long", acct: channels.Account{WebhookSecret: strings.Repeat("a", 257)}, wantErr: true},
		{name: "secret with bad characters", acct: channels.Account{WebhookSecret: "abc def"}, wantErr: true},
		{name: "secret with colon", acct: channels.Account{WebhookSecret: "abc:def"}, wantErr: true},
		{
			name:    "bad bot token",
			acct:    channels.Account{Credentials: json.RawMessage(`{"bot_token":"not a token"}`), WebhookSecret: "abc"},
			wantErr: true,
		},
		{
			name:    "bot token of wrong type",
			acct:    channels.Account{Credentials: json.RawMessage(`{"bot_token":123}`), WebhookSecret: "abc"},
			wantErr: true,
		},
		{
			name:    "credentials not JSON",
			acct:    channels.Account{Credentials: json.RawMessage(`bot_token=1`), WebhookSecret: "abc"},
			wantErr: true,
		},
		{
			name:    "credentials an array",
			acct:    channels.Account{Credentials: json.RawMessage(`["123:abc"]`), WebhookSecret: "abc"},
			wantErr: true,
		},
		{
			name:    "settings not an object",
			acct:    channels.Account{Settings: json.RawMessage(`"x"`), WebhookSecret: "abc"},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := New(Options{}).NewInbound(tt.acct)
			if tt.wantErr {
				require.ErrorIs(t, err, channels.ErrInvalidConfig)
				require.Nil(t, in)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, in.(*inbound).cfg)
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	body := channelstest.ReadFixture(t, "message_private_text.json")
	tests := []struct {
		name   string
		header func(h http.Header)
		ok     bool
	}{
		{name: "matching token", header: func(http.Header) {}, ok: true},
		{name: "missing header", header: func(h http.Header) { h.Del(SecretTokenHeader) }},
		{name: "empty header", header: func(h http.Header) { h.Set(SecretTokenHeader, "") }},
		{name: "wrong token", header: func(h http.Header) { h.Set(SecretTokenHeader, "s3cr3t_Token-for-MIX") }},
		{name: "prefix of token", header: func(h http.Header) { h.Set(SecretTokenHeader, testSecret[:5]) }},
		{name: "token plus suffix", header: func(h http.Header) { h.Set(SecretTokenHeader, testSecret+"x") }},
		{name: "case differs", header: func(h http.Header) { h.Set(SecretTokenHeader, strings.ToUpper(testSecret)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := postRequest(body)
			tt.header(req.Header)
			err := in.Verify(context.Background(), req)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, channels.ErrUnauthorized)
		})
	}
	t.Run("nil request", func(t *testing.T) {
		t.Parallel()
		require.ErrorIs(t, in.Verify(context.Background(), nil), channels.ErrUnauthorized)
	})
	t.Run("nil header", func(t *testing.T) {
		t.Parallel()
		require.ErrorIs(t, in.Verify(context.Background(), &channels.Request{Body: body}), channels.ErrUnauthorized)
	})
}

func TestParse(t *testing.T) {
	t.Parallel()
	ada := envelope.Sender{ID: "1111111111", DisplayName: "Ada Lovelace"}
	adaFirst := envelope.Sender{ID: "1111111111", DisplayName: "Ada"}
	adaDM := envelope.Conversation{ID: "1111111111", Type: envelope.ConversationDM}
	team := envelope.Conversation{ID: "-4123456789", Type: envelope.ConversationGroup, Title: "Team chat"}
	support := envelope.Conversation{ID: "-1001234567890", Type: envelope.ConversationGroup, Title: "MIO Support"}
	news := envelope.Conversation{ID: "-1009876543210", Type: envelope.ConversationChannel, Title: "MIO Announcements"}
	pending := func(kind, ref, name, mime string, size int64) envelope.Attachment {
		return envelope.Attachment{
			Kind: kind, Name: name, MimeType: mime, Size: size,
			Status: envelope.AttachmentPending, Source: &envelope.AttachmentSource{Ref: ref},
		}
	}
	tests := []struct {
		fixture string
		want    envelope.Message
	}{
		{
			fixture: "message_private_text.json",
			want: envelope.Message{
				SourceMessageID: "870105623", Conversation: adaDM, Sender: ada,
				PlatformMessageID: "1365",
				Text:              "/start hello bot", SentAt: time.Unix(1717171717, 0).UTC(),
			},
		},
		{
			fixture: "message_supergroup_topic_reply.json",
			want: envelope.Message{
				SourceMessageID: "870105624", Conversation: support, ThreadID: "77", ReplyToSourceID: "86",
				PlatformMessageID: "88",
				Sender:            envelope.Sender{ID: "2222222222", DisplayName: "grace_h"},
				Text:              "Yes, all green since 10:05.", SentAt: time.Unix(1717171800, 0).UTC(),
			},
		},
		{
			fixture: "edited_message.json",
			want: envelope.Message{
				SourceMessageID: "870105625", Conversation: team, Sender: ada,
				EditOf: envelope.NewEditRef("42"),
				Text:   "fixed typo", Edited: true, SentAt: time.Unix(1717171000, 0).UTC(),
			},
		},
		{
			fixture: "channel_post.json",
			want: envelope.Message{
				SourceMessageID: "870105626", Conversation: news,
				PlatformMessageID: "310",
				Sender:            envelope.Sender{ID: "-1009876543210", DisplayName: "MIO Announcements"},
				Text:              "v1.2 is out", SentAt: time.Unix(1717172000, 0).UTC(),
			},
		},
		{
			fixture: "edited_channel_post.json",
			want: envelope.Message{
				SourceMessageID: "870105627", Conversation: news,
				EditOf: envelope.NewEditRef("310"),
				Sender: envelope.Sender{ID: "-1009876543210", DisplayName: "MIO Announcements"},
				Text:   "v1.2.1 is out", Edited: true, SentAt: time.Unix(1717172000, 0).UTC(),
			},
		},
		{
			fixture: "callback_query.json",
			want: envelope.Message{
				SourceMessageID: "870105628",
				Conversation:    envelope.Conversation{ID: "1111111111", Type: envelope.ConversationDM},
				ReplyToSourceID: "1370",
				Sender:          adaFirst,
				Text:            "deploy:approve",
				Kind:            envelope.KindInteraction,
				Interaction:     &envelope.Interaction{ActionID: "deploy", Value: "approve", MessageID: "1370"},
			},
		},
		{
			fixture: "callback_query_inline.json",
			want: envelope.Message{
				SourceMessageID: "870105629", Conversation: adaDM, Sender: adaFirst, Text: "vote:up",
				Kind:        envelope.KindInteraction,
				Interaction: &envelope.Interaction{ActionID: "vote", Value: "up", MessageID: "AAAAAOb3AgBkYzIxMjM0"},
			},
		},
		{
			fixture: "photo.json",
			want: envelope.Message{
				SourceMessageID: "870105630", Conversation: adaDM, Sender: adaFirst,
				PlatformMessageID: "1380",
				Text:              "the whiteboard after the retro",
				Attachments:       []envelope.Attachment{pending(envelope.KindImage, "AgACAgQAAxkBAAIBZ2aLarge", "", "", 98765)},
				SentAt:            time.Unix(1717174000, 0).UTC(),
			},
		},
		{
			fixture: "document.json",
			want: envelope.Message{
				SourceMessageID: "870105631", Conversation: adaDM, Sender: adaFirst,
				PlatformMessageID: "1381",
				Attachments:       []envelope.Attachment{pending(envelope.KindFile, "BQACAgIAAxkBAAIBaGbDoc", "report-q2.pdf", "application/pdf", 482113)},
				SentAt:            time.Unix(1717174100, 0).UTC(),
			},
		},
		{
			fixture: "voice.json",
			want: envelope.Message{
				SourceMessageID: "870105632", Conversation: adaDM, Sender: adaFirst,
				PlatformMessageID: "1382",
				Attachments:       []envelope.Attachment{pending(envelope.KindAudio, "AwACAgIAAxkBAAIBaWbVoice", "", "audio/ogg", 12745)},
				SentAt:            time.Unix(1717174200, 0).UTC(),
			},
		},
		{
			fixture: "audio.json",
			want: envelope.Message{
				SourceMessageID: "870105633", Conversation: adaDM, Sender: adaFirst,
				PlatformMessageID: "1383",
				Attachments:       []envelope.Attachment{pending(envelope.KindAudio, "CQACAgIAAxkBAAIBambAudio", "standup.mp3", "audio/mpeg", 3411020)},
				SentAt:            time.Unix(1717174300, 0).UTC(),
			},
		},
		{
			fixture: "video.json",
			want: envelope.Message{
				SourceMessageID: "870105634", Conversation: team, Sender: adaFirst,
				PlatformMessageID: "1384",
				Text:              "demo of the new flow",
				Attachments:       []envelope.Attachment{pending(envelope.KindVideo, "BAACAgIAAxkBAAIBa2bVideo", "demo.mp4", "video/mp4", 5242880)},
				SentAt:            time.Unix(1717174400, 0).UTC(),
			},
		},
		{
			fixture: "sticker.json",
			want: envelope.Message{
				SourceMessageID: "870105635", Conversation: adaDM, Sender: adaFirst,
				PlatformMessageID: "1385",
				Attachments:       []envelope.Attachment{pending(envelope.KindSticker, "CAACAgIAAxkBAAIBbGbSticker", "", "", 22110)},
				SentAt:            time.Unix(1717174500, 0).UTC(),
			},
		},
		{
			fixture: "anonymous_admin.json",
			want: envelope.Message{
				SourceMessageID: "870105636", Conversation: support,
				PlatformMessageID: "90",
				Sender:            envelope.Sender{ID: "-1001234567890", DisplayName: "MIO Support"},
				Text:              "Please keep it on topic.", SentAt: time.Unix(1717175000, 0).UTC(),
			},
		},
	}
	in := newTestInbound(t)
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			body := channelstest.ReadFixture(t, tt.fixture)
			req := postRequest(body)
			require.NoError(t, in.Verify(context.Background(), req))
			got, err := in.Parse(context.Background(), req)
			require.NoError(t, err)
			require.Nil(t, got.Reply)
			require.Empty(t, got.Statuses)
			require.Len(t, got.Messages, 1)
			msg := got.Messages[0]
			require.JSONEq(t, string(body), string(msg.Raw))
			msg.Raw = nil
			want := tt.want
			want.ChannelType = envelope.ChannelTelegram
			require.Equal(t, want, msg)
		})
	}
}

func TestParseIgnoresOtherUpdates(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	for _, body := range []string{
		string(channelstest.ReadFixture(t, "my_chat_member.json")),
		`{"update_id": 5, "inline_query": {"id": "1", "from": {"id": 1, "is_bot": false, "first_name": "A"}, "query": "q", "offset": ""}}`,
		`{"update_id": 6, "poll": {"id": "1", "question": "?", "options": [], "total_voter_count": 0}}`,
		`{"update_id": 7}`,
		`{"update_id": 8, "message": null}`,
	} {
		got, err := in.Parse(context.Background(), postRequest([]byte(body)))
		require.NoError(t, err, body)
		require.NotNil(t, got)
		require.Empty(t, got.Messages, body)
	}
}

func TestParseBadRequests(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	tests := []struct {
		name string
		body string
		req  func(*channels.Request)
	}{
		{name: "empty body", body: ""},
		{name: "whitespace body", body: " \n"},
		{name: "not JSON", body: "update_id=1"},
		{name: "truncated JSON", body: `{"update_id": 1, "message": {`},
		{name: "trailing garbage", body: `{"update_id": 1} x`},
		{name: "JSON array", body: `[{"update_id": 1}]`},
		{name: "JSON null", body: `null`},
		{name: "missing update_id", body: `{"message": {"message_id": 1, "date": 1, "chat": {"id": 1, "type": "private"}}}`},
		{name: "null update_id", body: `{"update_id": null}`},
		{name: "update_id a string", body: `{"update_id": "1"}`},
		{name: "update_id a float", body: `{"update_id": 1.5}`},
		{name: "update_id overflows", body: `{"update_id": 99999999999999999999}`},
		{name: "message without chat", body: `{"update_id": 1, "message": {"message_id": 1, "date": 1, "text": "hi"}}`},
		{name: "message chat without id", body: `{"update_id": 1, "message": {"message_id": 1, "date": 1, "chat": {"type": "private"}}}`},
		{name: "edited message without chat", body: `{"update_id": 1, "edited_message": {"message_id": 1}}`},
		{name: "channel post without chat", body: `{"update_id": 1, "channel_post": {"message_id": 1}}`},
		{name: "callback query without from", body: `{"update_id": 1, "callback_query": {"id": "1", "data": "x"}}`},
		{name: "text of wrong type", body: `{"update_id": 1, "message": {"message_id": 1, "chat": {"id": 1}, "text": 5}}`},
		{name: "GET request", body: `{"update_id": 1}`, req: func(r *channels.Request) { r.Method = http.MethodGet }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := postRequest([]byte(tt.body))
			if tt.req != nil {
				tt.req(req)
			}
			got, err := in.Parse(context.Background(), req)
			require.Nil(t, got)
			var bad *channels.BadRequestError
			require.ErrorAs(t, err, &bad)
			require.NotEmpty(t, bad.Reason)
		})
	}
	t.Run("nil request", func(t *testing.T) {
		t.Parallel()
		_, err := in.Parse(context.Background(), nil)
		var bad *channels.BadRequestError
		require.True(t, errors.As(err, &bad))
	})
}

func TestParseEdgeCases(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, m envelope.Message)
	}{
		{
			name: "unknown chat type with positive id is a DM",
			body: `{"update_id": 1, "message": {"message_id": 1, "chat": {"id": 42, "type": "future"}, "text": "x"}}`,
			check: func(t *testing.T, m envelope.Message) {
				require.Equal(t, envelope.Conversation{ID: "42", Type: envelope.ConversationDM}, m.Conversation)
			},
		},
		{
			name: "unknown chat type with negative id is a group",
			body: `{"update_id": 1, "message": {"message_id": 1, "chat": {"id": -42}, "text": "x"}}`,
			check: func(t *testing.T, m envelope.Message) {
				require.Equal(t, envelope.ConversationGroup, m.Conversation.Type)
			},
		},
		{
			name: "no sender falls back to the chat",
			body: `{"update_id": 1, "channel_post": {"message_id": 1, "chat": {"id": -100, "type": "channel", "title": "News"}}}`,
			check: func(t *testing.T, m envelope.Message) {
				require.Equal(t, envelope.Sender{ID: "-100", DisplayName: "News"}, m.Sender)
			},
		},
		{
			name: "bot sender",
			body: `{"update_id": 1, "message": {"message_id": 1, "from": {"id": 9, "is_bot": true, "first_name": "B", "username": "b_bot"}, "chat": {"id": -5, "type": "group"}}}`,
			check: func(t *testing.T, m envelope.Message) {
				require.Equal(t, envelope.Sender{ID: "9", DisplayName: "B", IsBot: true}, m.Sender)
			},
		},
		{
			name:  "text wins over caption",
			body:  `{"update_id": 1, "message": {"message_id": 1, "chat": {"id": 5}, "text": "t", "caption": "c"}}`,
			check: func(t *testing.T, m envelope.Message) { require.Equal(t, "t", m.Text) },
		},
		{
			name: "photo sizes tie on pixels, larger file wins; sizes without file_id skipped",
			body: `{"update_id": 1, "message": {"message_id": 1, "chat": {"id": 5}, "photo": [
				{"file_id": "a", "width": 10, "height": 10, "file_size": 5},
				{"file_id": "", "width": 1000, "height": 1000},
				{"file_id": "b", "width": 10, "height": 10, "file_size": 7}]}}`,
			check: func(t *testing.T, m envelope.Message) {
				require.Len(t, m.Attachments, 1)
				require.Equal(t, "b", m.Attachments[0].Source.Ref)
			},
		},
		{
			name: "huge photo dimensions do not overflow",
			body: `{"update_id": 1, "message": {"message_id": 1, "chat": {"id": 5}, "photo": [
				{"file_id": "a", "width": 9223372036854775807, "height": 9223372036854775807},
				{"file_id": "b", "width": 10, "height": 10, "file_size": 7}]}}`,
			check: func(t *testing.T, m envelope.Message) { require.Equal(t, "a", m.Attachments[0].Source.Ref) },
		},
		{
			name: "document without file_id is skipped, negative size clamped",
			body: `{"update_id": 1, "message": {"message_id": 1, "chat": {"id": 5}, "document": {"file_name": "x"}, "voice": {"file_id": "v", "file_size": -3}}}`,
			check: func(t *testing.T, m envelope.Message) {
				require.Len(t, m.Attachments, 1)
				require.Equal(t, envelope.KindAudio, m.Attachments[0].Kind)
				require.Zero(t, m.Attachments[0].Size)
			},
		},
		{
			name:  "date beyond year 9999 gives zero SentAt",
			body:  `{"update_id": 1, "message": {"message_id": 1, "chat": {"id": 5}, "date": 9223372036854775807}}`,
			check: func(t *testing.T, m envelope.Message) { require.True(t, m.SentAt.IsZero()) },
		},
		{
			name:  "negative update_id is still a key",
			body:  `{"update_id": -1, "message": {"message_id": 1, "chat": {"id": 5}}}`,
			check: func(t *testing.T, m envelope.Message) { require.Equal(t, "-1", m.SourceMessageID) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := in.Parse(context.Background(), postRequest([]byte(tt.body)))
			require.NoError(t, err)
			require.Len(t, got.Messages, 1)
			tt.check(t, got.Messages[0])
		})
	}
}

func TestParseRawIsCopied(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	body := channelstest.ReadFixture(t, "message_private_text.json")
	got, err := in.Parse(context.Background(), postRequest(body))
	require.NoError(t, err)
	want := append([]byte(nil), body...)
	for i := range body {
		body[i] = 'x'
	}
	require.Equal(t, want, []byte(got.Messages[0].Raw))
}
