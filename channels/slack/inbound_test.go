package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

const testSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// testNow is the clock of every signed test request.
var testNow = time.Unix(1700000000, 0)

func newTestInbound(t testing.TB, ch *Channel, creds string) channels.Inbound {
	t.Helper()
	if ch == nil {
		ch = New(Options{})
	}
	acct := channels.Account{ID: uuid.New(), TenantID: uuid.New(), WebhookSecret: testSecret}
	if creds != "" {
		acct.Credentials = json.RawMessage(creds)
	}
	in, err := ch.NewInbound(acct)
	require.NoError(t, err)
	return in
}

// signedRequest returns a JSON request signed with testSecret at testNow.
func signedRequest(body []byte) *channels.Request {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, Signature(testSecret, ts, body))
	return &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow}
}

// knownAnswerBody is channels.md's (form-encoded) known-answer body.
const knownAnswerBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"

const knownAnswerSignature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

func TestSignatureKnownAnswer(t *testing.T) {
	t.Parallel()
	require.Equal(t, knownAnswerSignature, Signature(testSecret, "1531420618", []byte(knownAnswerBody)))
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := channelstest.ReadFixture(t, "message.json")
	tests := []struct {
		name    string
		mutate  func(r *channels.Request)
		wantErr bool
	}{
		{name: "valid", mutate: func(*channels.Request) {}},
		{name: "known answer", mutate: func(r *channels.Request) {
			r.Body = []byte(knownAnswerBody)
			r.Header.Set(HeaderTimestamp, "1531420618")
			r.Header.Set(HeaderSignature, knownAnswerSignature)
			r.Now = time.Unix(1531420618+60, 0)
		}},
		{name: "timestamp 4m59s old", mutate: func(r *channels.Request) { r.Now = testNow.Add(299 * time.Second) }},
		{name: "zero Now uses the wall clock", wantErr: true, mutate: func(r *channels.Request) { r.Now = time.Time{} }},
		{name: "missing signature", wantErr: true, mutate: func(r *channels.Request) { r.Header.Del(HeaderSignature) }},
		{name: "missing timestamp", wantErr: true, mutate: func(r *channels.Request) { r.Header.Del(HeaderTimestamp) }},
		{name: "malformed timestamp", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderTimestamp, "12a") }},
		{name: "stale", wantErr: true, mutate: func(r *channels.Request) { r.Now = testNow.Add(5*time.Minute + time.Second) }},
		{name: "from the future", wantErr: true, mutate: func(r *channels.Request) { r.Now = testNow.Add(-5*time.Minute - time.Second) }},
		{name: "huge timestamp", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderTimestamp, "9223372036854775807") }},
		{name: "wrong secret", wantErr: true, mutate: func(r *channels.Request) {
			r.Header.Set(HeaderSignature, Signature("other-secret", r.Header.Get(HeaderTimestamp), r.Body))
		}},
		{name: "tampered body", wantErr: true, mutate: func(r *channels.Request) { r.Body = append([]byte(" "), r.Body...) }},
		{name: "timestamp not the signed one", wantErr: true, mutate: func(r *channels.Request) {
			r.Header.Set(HeaderTimestamp, strconv.FormatInt(testNow.Unix()+1, 10))
		}},
		{name: "other version", wantErr: true, mutate: func(r *channels.Request) {
			r.Header.Set(HeaderSignature, "v1="+r.Header.Get(HeaderSignature)[3:])
		}},
		{name: "not hex", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderSignature, "v0=zz") }},
		{name: "truncated", wantErr: true, mutate: func(r *channels.Request) {
			r.Header.Set(HeaderSignature, r.Header.Get(HeaderSignature)[:40])
		}},
	}
	in := newTestInbound(t, nil, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := signedRequest(body)
			tt.mutate(req)
			err := in.Verify(context.Background(), req)
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, channels.ErrUnauthorized)
		})
	}
	require.ErrorIs(t, in.Verify(context.Background(), nil), channels.ErrUnauthorized)
}

func TestNewInboundConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		acct    channels.Account
		wantErr bool
	}{
		{name: "secret only", acct: channels.Account{WebhookSecret: testSecret}},
		{name: "with bot token", acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{"bot_token":"xoxb-1-2-abc"}`)}},
		{name: "null settings and credentials", acct: channels.Account{WebhookSecret: testSecret, Settings: json.RawMessage(`null`), Credentials: json.RawMessage(` null `)}},
		{name: "empty objects", acct: channels.Account{WebhookSecret: testSecret, Settings: json.RawMessage(`{}`), Credentials: json.RawMessage(`{}`)}},
		{name: "missing secret", wantErr: true, acct: channels.Account{}},
		{name: "secret with newline", wantErr: true, acct: channels.Account{WebhookSecret: testSecret + "\n"}},
		{name: "settings not an object", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Settings: json.RawMessage(`[1]`)}},
		{name: "malformed credentials", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{"bot_token":`)}},
		{name: "bot_token not a string", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{"bot_token":42}`)}},
		{name: "bot_token with a space", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{"bot_token":"xoxb-1 2"}`)}},
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
			require.NotNil(t, in)
		})
	}
}

func TestChannel(t *testing.T) {
	t.Parallel()
	ch := New(Options{})
	require.Equal(t, envelope.ChannelSlack, ch.Type())
	require.Equal(t, channels.Capabilities{Edit: true, Threads: true, Attachments: true, Interactions: true, Reactions: true}, channels.CapabilitiesOf(ch))
	var _ channels.Channel = ch
}

func TestParseHandshake(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t, nil, "")
	body := channelstest.ReadFixture(t, "url_verification.json")
	req := signedRequest(body)
	require.NoError(t, in.Verify(context.Background(), req))
	got, err := in.Parse(context.Background(), req)
	require.NoError(t, err)
	require.Empty(t, got.Messages)
	require.NotNil(t, got.Reply)
	require.Equal(t, http.StatusOK, got.Reply.Status)
	require.Equal(t, "application/json", got.Reply.ContentType)
	require.JSONEq(t, `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`, string(got.Reply.Body))
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		want    []envelope.Message // Raw is checked separately
	}{
		{fixture: "message.json", want: []envelope.Message{{
			ChannelType:       envelope.ChannelSlack,
			SourceMessageID:   "Ev08MFMKH6",
			PlatformMessageID: "1355517523.000005",
			Conversation:      envelope.Conversation{ID: "C2147483705", Type: envelope.ConversationChannel},
			Sender:            envelope.Sender{ID: "U2147483697"},
			Text:              "Hi @U0LAN0Z89, see the report (https://example.com/report?a=1&b=2) in #general & ping @here if 2 < 3",
			Attachments:       []envelope.Attachment{},
			SentAt:            time.Date(2012, 12, 14, 20, 38, 43, 5000, time.UTC),
		}}},
		{fixture: "message_im_thread.json", want: []envelope.Message{{
			ChannelType:       envelope.ChannelSlack,
			SourceMessageID:   "Ev0PV52K21",
			PlatformMessageID: "1531420618.000200",
			Conversation:      envelope.Conversation{ID: "D0PNCRP9N", Type: envelope.ConversationDM},
			ThreadID:          "1531420000.000100",
			Sender:            envelope.Sender{ID: "U2147483697"},
			Text:              "replying in the thread",
			Attachments:       []envelope.Attachment{},
			SentAt:            time.Unix(1531420618, 200000).UTC(),
		}}},
		{fixture: "message_mpim.json", want: []envelope.Message{{
			ChannelType:       envelope.ChannelSlack,
			SourceMessageID:   "Ev0PV52K22",
			PlatformMessageID: "1531420700.000300",
			Conversation:      envelope.Conversation{ID: "G0PNCRPAB", Type: envelope.ConversationGroup},
			Sender:            envelope.Sender{ID: "U2147483697"},
			Text:              "group chat hello",
			Attachments:       []envelope.Attachment{},
			SentAt:            time.Unix(1531420700, 300000).UTC(),
		}}},
		{fixture: "file_share.json", want: []envelope.Message{{
			ChannelType:       envelope.ChannelSlack,
			SourceMessageID:   "Ev0PV52K23",
			PlatformMessageID: "1531420800.000400",
			Conversation:      envelope.Conversation{ID: "C2147483705", Type: envelope.ConversationChannel},
			Sender:            envelope.Sender{ID: "U2147483697"},
			Text:              "here are the files",
			Attachments: []envelope.Attachment{
				{Kind: envelope.KindImage, Name: "photo.png", MimeType: "image/png", Size: 123456, Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://files.slack.com/files-pri/T061EG9R6-F0S43PZDF/download/photo.png"}},
				{Kind: envelope.KindAudio, Name: "voice.m4a", MimeType: "audio/mp4", Size: 20480, Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://files.slack.com/files-pri/T061EG9R6-F0S43Q1AB/voice.m4a"}},
				{Kind: envelope.KindVideo, Name: "clip.mp4", MimeType: "video/mp4", Size: 9000000, Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://files.slack.com/files-pri/T061EG9R6-F0S43Q2CD/download/clip.mp4"}},
				{Kind: envelope.KindFile, Name: "report.pdf", MimeType: "application/pdf", Size: 4096, Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://files.slack.com/files-pri/T061EG9R6-F0S43Q3EF/download/report.pdf"}},
				{Kind: envelope.KindFile, Status: envelope.AttachmentPending, Source: &envelope.AttachmentSource{Ref: "F0S43Q4GH"}},
			},
			SentAt: time.Unix(1531420800, 400000).UTC(),
		}}},
		{fixture: "message_changed.json", want: []envelope.Message{{
			ChannelType:     envelope.ChannelSlack,
			SourceMessageID: "Ev0PV52K24",
			EditOf:          envelope.NewEditRef("1358878749.000002"),
			Conversation:    envelope.Conversation{ID: "C2147483705", Type: envelope.ConversationChannel},
			ThreadID:        "1358878700.000001",
			Sender:          envelope.Sender{ID: "U2147483697"},
			Text:            "fixed the typo",
			Attachments:     []envelope.Attachment{},
			Edited:          true,
			SentAt:          time.Unix(1358878749, 2000).UTC(),
		}}},
		{fixture: "message_deleted.json", want: []envelope.Message{{
			ChannelType:     envelope.ChannelSlack,
			SourceMessageID: "Ev0PV52K25",
			EditOf:          envelope.NewEditRef("1358878749.000002"),
			Conversation:    envelope.Conversation{ID: "C2147483705", Type: envelope.ConversationChannel},
			Sender:          envelope.Sender{ID: "U2147483697"},
			Attachments:     []envelope.Attachment{},
			Deleted:         true,
			SentAt:          time.Unix(1358878749, 2000).UTC(),
		}}},
		{fixture: "bot_message.json", want: []envelope.Message{{
			ChannelType:       envelope.ChannelSlack,
			SourceMessageID:   "Ev0PV52K26",
			PlatformMessageID: "1358877455.000010",
			Conversation:      envelope.Conversation{ID: "C2147483705", Type: envelope.ConversationChannel},
			Sender:            envelope.Sender{ID: "B0PNCHHK3", DisplayName: "deploy-bot", IsBot: true},
			Text:              "Deploy finished :white_check_mark:",
			Attachments:       []envelope.Attachment{},
			SentAt:            time.Unix(1358877455, 10000).UTC(),
		}}},
		{fixture: "app_mention.json"},
		{fixture: "channel_join.json"},
		// Not a message, and not shaped like one (channel is an object):
		// ignored, not a malformed message.
		{fixture: "channel_created.json"},
		{fixture: "app_rate_limited.json"},
	}
	in := newTestInbound(t, nil, "")
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			body := channelstest.ReadFixture(t, tt.fixture)
			req := signedRequest(body)
			require.NoError(t, in.Verify(context.Background(), req))
			got, err := in.Parse(context.Background(), req)
			require.NoError(t, err)
			require.Nil(t, got.Reply)
			require.Empty(t, got.Statuses)
			require.Len(t, got.Messages, len(tt.want))
			for i := range got.Messages {
				require.JSONEq(t, string(body), string(got.Messages[i].Raw))
				got.Messages[i].Raw = nil
			}
			if len(tt.want) == 0 {
				require.Empty(t, got.Messages)
				return
			}
			require.Equal(t, tt.want, got.Messages)
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	event := func(ev string) string {
		return `{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":` + ev + `}`
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		wantMedia   bool
	}{
		{name: "malformed JSON", body: `{"type":`},
		{name: "not an object", body: `[1,2]`},
		{name: "trailing garbage", body: `{"type":"event_callback"} x`},
		{name: "empty body", body: ``},
		{name: "invalid UTF-8", body: "{\"type\":\"event_callback\",\"x\":\"\xff\"}"},
		{name: "missing type", body: `{"event_id":"Ev1"}`},
		{name: "type not a string", body: `{"type":1}`},
		{name: "handshake without challenge", body: `{"type":"url_verification"}`},
		{name: "event_callback without event_id", body: `{"type":"event_callback","event":{"type":"message"}}`},
		{name: "event_callback without event", body: `{"type":"event_callback","event_id":"Ev1"}`},
		{name: "event not an object", body: event(`"message"`)},
		{name: "event type not a string", body: event(`{"type":["message"]}`)},
		{name: "message without channel", body: event(`{"type":"message","user":"U1","ts":"1.2"}`)},
		{name: "message without ts", body: event(`{"type":"message","user":"U1","channel":"C1"}`)},
		{name: "message with bad ts", body: event(`{"type":"message","user":"U1","channel":"C1","ts":"-1.5"}`)},
		{name: "message with long fraction", body: event(`{"type":"message","user":"U1","channel":"C1","ts":"1.0123456789"}`)},
		{name: "message without user", body: event(`{"type":"message","channel":"C1","ts":"1.2"}`)},
		{name: "message with numeric text", body: event(`{"type":"message","user":"U1","channel":"C1","ts":"1.2","text":5}`)},
		{name: "file with string size", body: event(`{"type":"message","subtype":"file_share","user":"U1","channel":"C1","ts":"1.2","files":[{"size":"1"}]}`)},
		{name: "message_changed without message", body: event(`{"type":"message","subtype":"message_changed","channel":"C1","ts":"1.2"}`)},
		{name: "message_changed without inner ts", body: event(`{"type":"message","subtype":"message_changed","channel":"C1","ts":"1.2","message":{"user":"U1"}}`)},
		{name: "form encoded without payload", contentType: "application/x-www-form-urlencoded", body: knownAnswerBody},
		{name: "form payload not JSON", contentType: "application/x-www-form-urlencoded", body: `payload=%7B`},
		{name: "block_actions without trigger_id", contentType: "application/x-www-form-urlencoded", body: `payload=` + url.QueryEscape(`{"type":"block_actions","user":{"id":"U1"},"channel":{"id":"C1"},"actions":[{"action_id":"a"}]}`)},
		{name: "block_actions without channel", contentType: "application/x-www-form-urlencoded", body: `payload=` + url.QueryEscape(`{"type":"block_actions","trigger_id":"t","user":{"id":"U1"},"actions":[{"action_id":"a"}]}`)},
		{name: "reaction without item ts", body: event(`{"type":"reaction_added","user":"U1","reaction":"x","item":{"type":"message","channel":"C1"}}`)},
		{name: "text/plain", contentType: "text/plain", body: `{}`, wantMedia: true},
		{name: "latin-1 charset", contentType: "application/json; charset=iso-8859-1", body: `{}`, wantMedia: true},
		{name: "garbage content type", contentType: "/", body: `{}`, wantMedia: true},
	}
	in := newTestInbound(t, nil, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := signedRequest([]byte(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			got, err := in.Parse(context.Background(), req)
			require.Error(t, err)
			require.Nil(t, got)
			if tt.wantMedia {
				require.ErrorIs(t, err, channels.ErrUnsupportedMediaType)
				return
			}
			var bad *channels.BadRequestError
			require.ErrorAs(t, err, &bad)
			require.NotEmpty(t, bad.Reason)
		})
	}
	_, err := in.Parse(context.Background(), nil)
	var bad *channels.BadRequestError
	require.ErrorAs(t, err, &bad)
}

func TestParseEdgeCases(t *testing.T) {
	t.Parallel()
	event := func(ev string) []byte {
		return []byte(`{"type":"event_callback","team_id":"T1","event_id":"Ev9","event":` + ev + `}`)
	}
	tests := []struct {
		name  string
		body  []byte
		check func(t *testing.T, m envelope.Message)
	}{
		{
			name: "delete without previous_message",
			body: event(`{"type":"message","subtype":"message_deleted","channel":"C1","ts":"2.0","deleted_ts":"1.5"}`),
			check: func(t *testing.T, m envelope.Message) {
				require.True(t, m.Deleted)
				require.Empty(t, m.Sender.ID)
				require.Equal(t, time.Unix(1, 500000000).UTC(), m.SentAt)
			},
		},
		{
			name: "channel type inferred from id",
			body: event(`{"type":"message","user":"U1","channel":"D123","ts":"1"}`),
			check: func(t *testing.T, m envelope.Message) {
				require.Equal(t, envelope.ConversationDM, m.Conversation.Type)
				require.Equal(t, time.Unix(1, 0).UTC(), m.SentAt)
			},
		},
		{
			name: "private channel",
			body: event(`{"type":"message","user":"U1","channel":"C9","channel_type":"group","ts":"1.000001"}`),
			check: func(t *testing.T, m envelope.Message) {
				require.Equal(t, envelope.ConversationGroup, m.Conversation.Type)
			},
		},
		{
			name: "app user with bot_id and bot_profile",
			body: event(`{"type":"message","user":"U7","bot_id":"B7","bot_profile":{"name":"helper"},"channel":"C1","ts":"1.1","text":"hi"}`),
			check: func(t *testing.T, m envelope.Message) {
				require.Equal(t, envelope.Sender{ID: "U7", DisplayName: "helper", IsBot: true}, m.Sender)
			},
		},
		{
			name: "thread_broadcast",
			body: event(`{"type":"message","subtype":"thread_broadcast","user":"U1","channel":"C1","ts":"5.0","thread_ts":"4.0","text":"also sent to channel"}`),
			check: func(t *testing.T, m envelope.Message) {
				require.Equal(t, "4.0", m.ThreadID)
				require.Equal(t, "also sent to channel", m.Text)
			},
		},
		{
			name: "edited file share keeps the inner files",
			body: event(`{"type":"message","subtype":"message_changed","channel":"C1","ts":"9.0","message":{"user":"U1","ts":"8.0","text":"new caption","files":[{"id":"F1","name":"a.jpg","mimetype":"image/jpeg","url_private":"https://files.slack.com/a.jpg"}]}}`),
			check: func(t *testing.T, m envelope.Message) {
				require.True(t, m.Edited)
				require.Len(t, m.Attachments, 1)
				require.Equal(t, envelope.KindImage, m.Attachments[0].Kind)
			},
		},
	}
	in := newTestInbound(t, nil, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := in.Parse(context.Background(), signedRequest(tt.body))
			require.NoError(t, err)
			require.Len(t, got.Messages, 1)
			require.Equal(t, "Ev9", got.Messages[0].SourceMessageID)
			tt.check(t, got.Messages[0])
		})
	}
}

func TestPlainText(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{name: "plain", in: "hello world", want: "hello world"},
		{name: "escapes", in: "a &lt;b&gt; &amp;amp;", want: "a <b> &amp;"},
		{name: "user mention", in: "hi <@U123>", want: "hi @U123"},
		{name: "user mention with label", in: "hi <@U123|bob>", want: "hi @bob"},
		{name: "channel mention", in: "<#C1|general>", want: "#general"},
		{name: "special mentions", in: "<!here> <!channel> <!everyone>", want: "@here @channel @everyone"},
		{name: "user group", in: "<!subteam^S1|@oncall>", want: "@oncall"},
		{name: "date fallback", in: "<!date^1392734382^{date}|Feb 18, 2014>", want: "Feb 18, 2014"},
		{name: "bare link", in: "<https://example.com>", want: "https://example.com"},
		{name: "labelled link", in: "<https://example.com|site>", want: "site (https://example.com)"},
		{name: "mailto", in: "<mailto:a@b.c|a@b.c>", want: "a@b.c"},
		{name: "unclosed", in: "a <b", want: "a <b"},
		{name: "empty sequence", in: "<>", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, plainText(tt.in))
		})
	}
}

func TestParseTS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "1531420618.000200", want: time.Date(2018, 7, 12, 18, 36, 58, 200000, time.UTC)},
		{in: "1531420618", want: time.Unix(1531420618, 0).UTC()},
		{in: "1.5", want: time.Unix(1, 500000000).UTC()},
		{in: "", wantErr: true},
		{in: ".5", wantErr: true},
		{in: "+1.5", wantErr: true},
		{in: "1.5.6", wantErr: true},
		{in: "1e9", wantErr: true},
		{in: "1234567890123.0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseTS(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
