package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

// channels.md's known answer.
const (
	kaSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	kaID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	kaTimestamp = 1696200454
	kaBody      = `{"type": "example.created", "timestamp":"2023-09-28T19:20:22+00:00", "data":{"str":"string","bool":true,"int":42}}`
	kaSignature = "v1,GgjvufBlIj71MBIVQotYGb+xEC3LNXCsIZp0HsDC8qs="
)

const (
	testSecret     = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	previousSecret = "whsec_ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoOEhYaHiImKi4yNjo+QkZKTlJWWl5iZmpucnZ6foKGiow=="
	testID         = "msg_2fGx7Qk1"
)

var testNow = time.Unix(1714564801, 0)

func newTestInbound(t testing.TB, secret, creds string) channels.Inbound {
	t.Helper()
	acct := channels.Account{ID: uuid.New(), TenantID: uuid.New(), WebhookSecret: secret}
	if creds != "" {
		acct.Credentials = json.RawMessage(creds)
	}
	in, err := New(Options{}).NewInbound(acct)
	require.NoError(t, err)
	return in
}

// signedRequest returns a JSON request with id testID signed with secret at
// testNow.
func signedRequest(t testing.TB, secret string, body []byte) *channels.Request {
	t.Helper()
	sig, err := Sign(secret, testID, testNow, body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderID, testID)
	h.Set(HeaderTimestamp, strconv.FormatInt(testNow.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow}
}

func TestSignKnownAnswer(t *testing.T) {
	t.Parallel()
	sig, err := Sign(kaSecret, kaID, time.Unix(kaTimestamp, 0), []byte(kaBody))
	require.NoError(t, err)
	require.Equal(t, kaSignature, sig)

	_, err = Sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", kaID, time.Unix(kaTimestamp, 0), []byte(kaBody))
	require.Error(t, err, "a secret without whsec_ is refused")
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := channelstest.ReadFixture(t, "message_created.json")
	otherSig := func(r *channels.Request) string {
		sig, err := Sign(kaSecret, testID, testNow, r.Body)
		require.NoError(t, err)
		return sig
	}
	tests := []struct {
		name    string
		mutate  func(r *channels.Request)
		wantErr bool
	}{
		{name: "valid", mutate: func(*channels.Request) {}},
		{name: "known answer under another secret", wantErr: true, mutate: func(r *channels.Request) {
			r.Body = []byte(kaBody)
			r.Header.Set(HeaderID, kaID)
			r.Header.Set(HeaderTimestamp, strconv.Itoa(kaTimestamp))
			r.Header.Set(HeaderSignature, kaSignature)
			r.Now = time.Unix(kaTimestamp, 0)
		}},
		{name: "several signatures, the valid one last", mutate: func(r *channels.Request) {
			r.Header.Set(HeaderSignature, "v1a,c2lnbmF0dXJl "+otherSig(r)+"  v1,!!notbase64 "+r.Header.Get(HeaderSignature))
		}},
		{name: "4m59s in the future", mutate: func(r *channels.Request) { r.Now = testNow.Add(-299 * time.Second) }},
		{name: "missing id", wantErr: true, mutate: func(r *channels.Request) { r.Header.Del(HeaderID) }},
		{name: "missing timestamp", wantErr: true, mutate: func(r *channels.Request) { r.Header.Del(HeaderTimestamp) }},
		{name: "missing signature", wantErr: true, mutate: func(r *channels.Request) { r.Header.Del(HeaderSignature) }},
		{name: "malformed timestamp", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderTimestamp, "2024-05-01") }},
		{name: "stale", wantErr: true, mutate: func(r *channels.Request) { r.Now = testNow.Add(5*time.Minute + time.Second) }},
		{name: "from the future", wantErr: true, mutate: func(r *channels.Request) { r.Now = testNow.Add(-5*time.Minute - time.Second) }},
		{name: "minimum int64 timestamp", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderTimestamp, "-9223372036854775808") }},
		{name: "zero Now falls back to the wall clock", wantErr: true, mutate: func(r *channels.Request) { r.Now = time.Time{} }},
		{name: "wrong secret", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderSignature, otherSig(r)) }},
		{name: "tampered body", wantErr: true, mutate: func(r *channels.Request) { r.Body = append(r.Body, ' ') }},
		{name: "other id", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderID, "msg_other") }},
		{name: "only other versions", wantErr: true, mutate: func(r *channels.Request) {
			r.Header.Set(HeaderSignature, "v1a,"+r.Header.Get(HeaderSignature)[3:]+" v2,"+r.Header.Get(HeaderSignature)[3:])
		}},
		{name: "no comma", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderSignature, "v1") }},
		{name: "not base64", wantErr: true, mutate: func(r *channels.Request) { r.Header.Set(HeaderSignature, "v1,***") }},
		{name: "truncated", wantErr: true, mutate: func(r *channels.Request) {
			r.Header.Set(HeaderSignature, r.Header.Get(HeaderSignature)[:20])
		}},
	}
	in := newTestInbound(t, testSecret, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := signedRequest(t, testSecret, body)
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

	ka := newTestInbound(t, kaSecret, "")
	req := signedRequest(t, testSecret, []byte(kaBody))
	req.Header.Set(HeaderID, kaID)
	req.Header.Set(HeaderTimestamp, strconv.Itoa(kaTimestamp))
	req.Header.Set(HeaderSignature, kaSignature)
	req.Now = time.Unix(kaTimestamp+30, 0)
	require.NoError(t, ka.Verify(context.Background(), req), "the known answer verifies under its own secret")
}

func TestVerifyRotation(t *testing.T) {
	t.Parallel()
	body := channelstest.ReadFixture(t, "message_minimal.json")
	rotating := newTestInbound(t, testSecret, `{"previous_secrets":["`+previousSecret+`","`+kaSecret+`"]}`)
	plain := newTestInbound(t, testSecret, "")
	tests := []struct {
		name         string
		signedWith   string
		wantRotating bool
	}{
		{name: "current secret", signedWith: testSecret, wantRotating: true},
		{name: "previous secret", signedWith: previousSecret, wantRotating: true},
		{name: "oldest secret", signedWith: kaSecret, wantRotating: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := signedRequest(t, tt.signedWith, body)
			require.NoError(t, rotating.Verify(context.Background(), req))
			err := plain.Verify(context.Background(), req)
			if tt.signedWith == testSecret {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, channels.ErrUnauthorized)
			}
		})
	}
}

func TestNewInboundConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		acct    channels.Account
		wantErr bool
	}{
		{name: "secret only", acct: channels.Account{WebhookSecret: testSecret}},
		{name: "24-byte secret", acct: channels.Account{WebhookSecret: kaSecret}},
		{name: "64-byte secret", acct: channels.Account{WebhookSecret: previousSecret}},
		{name: "previous secrets", acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{"previous_secrets":["` + kaSecret + `"]}`)}},
		{name: "null settings and credentials", acct: channels.Account{WebhookSecret: testSecret, Settings: json.RawMessage(`null`), Credentials: json.RawMessage(`null`)}},
		{name: "empty objects", acct: channels.Account{WebhookSecret: testSecret, Settings: json.RawMessage(`{}`), Credentials: json.RawMessage(`{"previous_secrets":[]}`)}},
		{name: "missing secret", wantErr: true, acct: channels.Account{}},
		{name: "no whsec_ prefix", wantErr: true, acct: channels.Account{WebhookSecret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
		{name: "not base64", wantErr: true, acct: channels.Account{WebhookSecret: "whsec_not base64!"}},
		{name: "16-byte secret", wantErr: true, acct: channels.Account{WebhookSecret: "whsec_AAECAwQFBgcICQoLDA0ODw=="}},
		{name: "65-byte secret", wantErr: true, acct: channels.Account{WebhookSecret: "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0A="}},
		{name: "bad previous secret", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{"previous_secrets":["whsec_x"]}`)}},
		{name: "empty previous secret", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{"previous_secrets":[""]}`)}},
		{name: "previous_secrets not a list", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{"previous_secrets":"` + kaSecret + `"}`)}},
		{name: "malformed credentials", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Credentials: json.RawMessage(`{`)}},
		{name: "settings not an object", wantErr: true, acct: channels.Account{WebhookSecret: testSecret, Settings: json.RawMessage(`"x"`)}},
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
	require.Equal(t, envelope.ChannelWebhook, ch.Type())
	require.Equal(t, channels.Capabilities{Edit: true, Threads: true, Attachments: true}, channels.CapabilitiesOf(ch))
	var _ channels.Channel = ch
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		want    envelope.Message // Raw is checked separately
	}{
		{fixture: "message_created.json", want: envelope.Message{
			ChannelType:       envelope.ChannelWebhook,
			SourceMessageID:   testID,
			PlatformMessageID: "msg_01HX7Q2M3N4P5R6S7T8V9W0XYZ",
			Conversation:      envelope.Conversation{ID: "conv_42", Type: envelope.ConversationGroup, Title: "Support: ACME Corp"},
			ThreadID:          "thr_7",
			Sender:            envelope.Sender{ID: "user_1001", DisplayName: "Ada Lovelace"},
			Text:              "Hello, the invoice is attached.",
			Attachments: []envelope.Attachment{
				{Kind: envelope.KindFile, Name: "invoice.pdf", MimeType: "application/pdf", Size: 48213, Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://files.example.com/a/invoice.pdf"}},
				{Kind: envelope.KindImage, Name: "screenshot.png", MimeType: "image/png", Size: 120344, Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://files.example.com/a/screenshot.png"}},
				{Kind: envelope.KindSticker, MimeType: "image/webp", Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://files.example.com/a/thumbsup.webp"}},
			},
			SentAt: time.Date(2024, 5, 1, 10, 0, 0, 250e6, time.UTC),
		}},
		{fixture: "message_minimal.json", want: envelope.Message{
			ChannelType:     envelope.ChannelWebhook,
			SourceMessageID: testID,
			Conversation:    envelope.Conversation{ID: "c1", Type: envelope.ConversationDM},
			Sender:          envelope.Sender{ID: "u1"},
			Attachments:     []envelope.Attachment{},
			SentAt:          time.Date(2024, 5, 1, 12, 0, 1, 0, time.UTC),
		}},
		{fixture: "message_updated.json", want: envelope.Message{
			ChannelType:     envelope.ChannelWebhook,
			SourceMessageID: testID,
			EditOf:          envelope.NewEditRef("msg_01HX7Q2M3N4P5R6S7T8V9W0XYZ"),
			Conversation:    envelope.Conversation{ID: "conv_42", Type: envelope.ConversationChannel},
			Sender:          envelope.Sender{ID: "bot_9", DisplayName: "Status bot", IsBot: true},
			Text:            "Hello, the corrected invoice is attached.",
			Attachments:     []envelope.Attachment{},
			Edited:          true,
			SentAt:          time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
		}},
		{fixture: "message_deleted.json", want: envelope.Message{
			ChannelType:     envelope.ChannelWebhook,
			SourceMessageID: testID,
			EditOf:          envelope.NewEditRef("msg_01HX7Q2M3N4P5R6S7T8V9W0XYZ"),
			Conversation:    envelope.Conversation{ID: "conv_42", Type: envelope.ConversationDM},
			Sender:          envelope.Sender{ID: "user_1001"},
			Attachments:     []envelope.Attachment{},
			Deleted:         true,
			SentAt:          time.Date(2024, 5, 1, 12, 10, 0, 0, time.UTC),
		}},
	}
	in := newTestInbound(t, testSecret, "")
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			body := channelstest.ReadFixture(t, tt.fixture)
			req := signedRequest(t, testSecret, body)
			require.NoError(t, in.Verify(context.Background(), req))
			got, err := in.Parse(context.Background(), req)
			require.NoError(t, err)
			require.Nil(t, got.Reply)
			require.Empty(t, got.Statuses)
			require.Len(t, got.Messages, 1)
			require.Equal(t, string(body), string(got.Messages[0].Raw))
			got.Messages[0].Raw = nil
			require.Equal(t, tt.want, got.Messages[0])
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	msg := func(data string) string {
		return `{"type":"message.created","timestamp":"2024-05-01T12:00:01Z","data":` + data + `}`
	}
	const conv = `"conversation":{"id":"c1"},"sender":{"id":"u1"}`
	tests := []struct {
		name        string
		contentType string
		id          *string
		body        string
		wantMedia   bool
	}{
		{name: "known answer's unknown type", body: kaBody},
		{name: "malformed JSON", body: `{"type":`},
		{name: "empty body", body: ``},
		{name: "not an object", body: `"message.created"`},
		{name: "trailing garbage", body: msg(`{`+conv+`}`) + `]`},
		{name: "invalid UTF-8", body: msg(`{` + conv + `,"text":"` + "\xc3\x28" + `"}`)},
		{name: "missing type", body: `{"timestamp":"2024-05-01T12:00:01Z","data":{` + conv + `}}`},
		{name: "unknown type", body: `{"type":"message.reacted","timestamp":"2024-05-01T12:00:01Z","data":{` + conv + `}}`},
		{name: "missing timestamp", body: `{"type":"message.created","data":{` + conv + `}}`},
		{name: "timestamp not RFC 3339", body: `{"type":"message.created","timestamp":"1714564801","data":{` + conv + `}}`},
		{name: "missing data", body: `{"type":"message.created","timestamp":"2024-05-01T12:00:01Z"}`},
		{name: "null data", body: msg(`null`)},
		{name: "data not an object", body: msg(`[]`)},
		{name: "missing conversation", body: msg(`{"sender":{"id":"u1"}}`)},
		{name: "missing conversation id", body: msg(`{"conversation":{"type":"dm"},"sender":{"id":"u1"}}`)},
		{name: "numeric conversation id", body: msg(`{"conversation":{"id":42},"sender":{"id":"u1"}}`)},
		{name: "unknown conversation type", body: msg(`{"conversation":{"id":"c1","type":"forum"},"sender":{"id":"u1"}}`)},
		{name: "missing sender", body: msg(`{"conversation":{"id":"c1"}}`)},
		{name: "missing sender id", body: msg(`{"conversation":{"id":"c1"},"sender":{"display_name":"x"}}`)},
		{name: "is_bot not a bool", body: msg(`{"conversation":{"id":"c1"},"sender":{"id":"u1","is_bot":"yes"}}`)},
		{name: "sent_at not RFC 3339", body: msg(`{` + conv + `,"sent_at":"yesterday"}`)},
		{name: "attachment without url", body: msg(`{` + conv + `,"attachments":[{"name":"a.pdf"}]}`)},
		{name: "attachment with relative url", body: msg(`{` + conv + `,"attachments":[{"url":"/a.pdf"}]}`)},
		{name: "attachment with file url", body: msg(`{` + conv + `,"attachments":[{"url":"file:///etc/passwd"}]}`)},
		{name: "attachment with negative size", body: msg(`{` + conv + `,"attachments":[{"url":"https://x.example/a","size":-1}]}`)},
		{name: "attachment with fractional size", body: msg(`{` + conv + `,"attachments":[{"url":"https://x.example/a","size":1.5}]}`)},
		{name: "attachment with unknown kind", body: msg(`{` + conv + `,"attachments":[{"url":"https://x.example/a","kind":"gif"}]}`)},
		{name: "attachments not a list", body: msg(`{` + conv + `,"attachments":{"url":"https://x.example/a"}}`)},
		{name: "missing webhook-id", id: new(""), body: msg(`{` + conv + `}`)},
		{name: "overlong webhook-id", id: new(string(make([]byte, 256))), body: msg(`{` + conv + `}`)},
		{name: "form encoded", contentType: "application/x-www-form-urlencoded", body: "type=message.created", wantMedia: true},
		{name: "text/plain", contentType: "text/plain; charset=utf-8", body: msg(`{` + conv + `}`), wantMedia: true},
		{name: "utf-16 charset", contentType: "application/json; charset=utf-16", body: msg(`{` + conv + `}`), wantMedia: true},
		{name: "garbage content type", contentType: ";;", body: msg(`{` + conv + `}`), wantMedia: true},
	}
	in := newTestInbound(t, testSecret, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := signedRequest(t, testSecret, []byte(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.id != nil {
				req.Header.Set(HeaderID, *tt.id)
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
