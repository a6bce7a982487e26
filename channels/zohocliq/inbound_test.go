package zohocliq

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

var (
	keysOnce sync.Once
	keyA     *rsa.PrivateKey
	keyB     *rsa.PrivateKey
)

// testKeys returns two RSA key pairs, generated once per test binary.
func testKeys(t testing.TB) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if keyA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keyB, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return keyA, keyB
}

func pkixPEM(t testing.TB, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func pkcs1PEM(pub *rsa.PublicKey) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(pub)}))
}

func settings(t testing.TB, v map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func rsaInbound(t testing.TB, key *rsa.PrivateKey, extra map[string]any) channels.Inbound {
	t.Helper()
	s := map[string]any{"public_key_pem": pkixPEM(t, &key.PublicKey)}
	for k, v := range extra {
		s[k] = v
	}
	in, err := New(Options{}).NewInbound(channels.Account{Settings: settings(t, s)})
	require.NoError(t, err)
	return in
}

func tokenInbound(t testing.TB, token string) channels.Inbound {
	t.Helper()
	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: token})
	require.NoError(t, err)
	return in
}

func sign(t testing.TB, key *rsa.PrivateKey, body []byte) string {
	t.Helper()
	digest := sha256.Sum256(body)
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(sig)
}

func signedRequest(t testing.TB, key *rsa.PrivateKey, body []byte) *channels.Request {
	t.Helper()
	h := http.Header{}
	h.Set("Content-Type", "application/json;charset=UTF-8")
	h.Set(HeaderSignature, sign(t, key, body))
	return &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: time.Now()}
}

func TestChannel(t *testing.T) {
	ch := New(Options{})
	require.Equal(t, envelope.ChannelZohoCliq, ch.Type())
	require.Equal(t, channels.Capabilities{Attachments: true}, channels.CapabilitiesOf(ch))
	require.Equal(t, DefaultAPIBaseURL, ch.opts.APIBaseURL)
	require.NotNil(t, ch.opts.HTTPClient)
	require.Equal(t, "http://fake", New(Options{APIBaseURL: "http://fake/"}).opts.APIBaseURL)
}

func TestParseConfig(t *testing.T) {
	a, _ := testKeys(t)
	pkix := pkixPEM(t, &a.PublicKey)
	der, _ := x509.MarshalPKIXPublicKey(&a.PublicKey)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)

	tests := []struct {
		name     string
		acct     channels.Account
		wantErr  bool
		wantMode string
		check    func(t *testing.T, cfg Config)
	}{
		{name: "rsa by default with PKIX PEM", wantMode: ModeRSA,
			acct: channels.Account{Settings: settings(t, map[string]any{"public_key_pem": pkix})}},
		{name: "rsa with PKCS#1 PEM", wantMode: ModeRSA,
			acct: channels.Account{Settings: settings(t, map[string]any{"public_key_pem": pkcs1PEM(&a.PublicKey)})}},
		{name: "rsa with bare base64 DER", wantMode: ModeRSA,
			acct: channels.Account{Settings: settings(t, map[string]any{"public_key_pem": base64.StdEncoding.EncodeToString(der)})}},
		{name: "token by default", wantMode: ModeToken,
			acct: channels.Account{WebhookSecret: "s3cret"},
			check: func(t *testing.T, cfg Config) {
				require.Empty(t, cfg.DedupField)
				require.Equal(t, DefaultAPIBaseURL, cfg.APIBaseURL)
				require.Equal(t, DefaultFieldPaths(), cfg.FieldPaths)
				require.Equal(t, DefaultConversationTypes(), cfg.ConversationTypes)
				require.Len(t, cfg.MessageHandlers, len(DefaultMessageHandlers()))
				require.True(t, cfg.MessageHandlers["mention_handler"])
				require.Equal(t, "s3cret", cfg.Token)
			}},
		{name: "explicit token mode beside a key", wantMode: ModeToken,
			acct: channels.Account{WebhookSecret: "s3cret", Settings: settings(t, map[string]any{"mode": "TOKEN", "public_key_pem": pkix})}},
		{name: "all settings", wantMode: ModeRSA,
			acct: channels.Account{
				Settings: settings(t, map[string]any{
					"mode": "rsa", "public_key_pem": pkix, "dedup_field": "message.uid",
					"message_handlers":   []string{"message_handler"},
					"field_paths":        map[string][]string{"text": {"message.content"}, "thread_id": {"chat.thread_id"}},
					"conversation_types": map[string]string{"chat": "dm"},
					"api_base_url":       "https://cliq.zoho.eu/",
				}),
				Credentials: json.RawMessage(`{"oauth_token":"1000.abc"}`),
			},
			check: func(t *testing.T, cfg Config) {
				require.Equal(t, "https://cliq.zoho.eu", cfg.APIBaseURL)
				require.Equal(t, "message.uid", cfg.DedupField)
				require.Equal(t, map[string]bool{"message_handler": true}, cfg.MessageHandlers)
				require.Equal(t, envelope.ConversationDM, cfg.ConversationTypes["chat"])
				require.Equal(t, envelope.ConversationChannel, cfg.ConversationTypes["channel"])
				require.Equal(t, []string{"message.content"}, cfg.FieldPaths[FieldText])
				require.Equal(t, []string{"chat.thread_id"}, cfg.FieldPaths[FieldThreadID])
				require.Equal(t, DefaultFieldPaths()[FieldSenderID], cfg.FieldPaths[FieldSenderID])
				require.NotNil(t, cfg.PublicKey)
			}},
		{name: "no key and no token", acct: channels.Account{}, wantErr: true},
		{name: "rsa mode without key", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"mode": "rsa"})}, wantErr: true},
		{name: "unknown mode", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"mode": "hmac"})}, wantErr: true},
		{name: "garbage key", acct: channels.Account{Settings: settings(t, map[string]any{"public_key_pem": "not a key!"})}, wantErr: true},
		{name: "PEM with garbage inside", acct: channels.Account{Settings: settings(t, map[string]any{
			"public_key_pem": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("junk")}))})}, wantErr: true},
		{name: "EC key", acct: channels.Account{Settings: settings(t, map[string]any{"public_key_pem": pkixPEM(t, &ec.PublicKey)})}, wantErr: true},
		{name: "settings not JSON", acct: channels.Account{WebhookSecret: "x", Settings: json.RawMessage(`{"mode":`)}, wantErr: true},
		{name: "settings not an object", acct: channels.Account{WebhookSecret: "x", Settings: json.RawMessage(`"rsa"`)}, wantErr: true},
		{name: "credentials not JSON", acct: channels.Account{WebhookSecret: "x", Credentials: json.RawMessage(`xx`)}, wantErr: true},
		{name: "unknown field", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"field_paths": map[string][]string{"txt": {"a"}}})}, wantErr: true},
		{name: "empty path segment", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"field_paths": map[string][]string{"text": {"message..text"}}})}, wantErr: true},
		{name: "required field emptied", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"field_paths": map[string][]string{"conversation_id": {}}})}, wantErr: true},
		{name: "bad dedup field", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"dedup_field": "message."})}, wantErr: true},
		{name: "empty handler list", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"message_handlers": []string{}})}, wantErr: true},
		{name: "blank handler name", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"message_handlers": []string{" "}})}, wantErr: true},
		{name: "bad conversation type", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"conversation_types": map[string]string{"chat": "room"}})}, wantErr: true},
		{name: "bad api base url", acct: channels.Account{WebhookSecret: "x", Settings: settings(t, map[string]any{"api_base_url": "cliq.zoho.eu"})}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := New(Options{})
			cfg, err := ch.ParseConfig(tt.acct)
			_, inErr := ch.NewInbound(tt.acct)
			if tt.wantErr {
				require.ErrorIs(t, err, channels.ErrInvalidConfig)
				require.ErrorIs(t, inErr, channels.ErrInvalidConfig)
				return
			}
			require.NoError(t, err)
			require.NoError(t, inErr)
			require.Equal(t, tt.wantMode, cfg.Mode)
			if tt.check != nil {
				tt.check(t, cfg)
			}
		})
	}
}

func TestVerifyRSA(t *testing.T) {
	a, b := testKeys(t)
	in := rsaInbound(t, a, nil)
	body := channelstest.ReadFixture(t, "message_handler_dm.json")

	tests := []struct {
		name   string
		req    func() *channels.Request
		wantOK bool
	}{
		{name: "valid", wantOK: true, req: func() *channels.Request { return signedRequest(t, a, body) }},
		{name: "valid raw url base64", wantOK: true, req: func() *channels.Request {
			r := signedRequest(t, a, body)
			sig, _ := base64.StdEncoding.DecodeString(r.Header.Get(HeaderSignature))
			r.Header.Set(HeaderSignature, base64.RawURLEncoding.EncodeToString(sig))
			return r
		}},
		{name: "signed with another key", req: func() *channels.Request { return signedRequest(t, b, body) }},
		{name: "missing signature", req: func() *channels.Request {
			r := signedRequest(t, a, body)
			r.Header.Del(HeaderSignature)
			return r
		}},
		{name: "signature not base64", req: func() *channels.Request {
			r := signedRequest(t, a, body)
			r.Header.Set(HeaderSignature, "%%%not base64%%%")
			return r
		}},
		{name: "signature truncated", req: func() *channels.Request {
			r := signedRequest(t, a, body)
			r.Header.Set(HeaderSignature, r.Header.Get(HeaderSignature)[:40])
			return r
		}},
		{name: "body tampered", req: func() *channels.Request {
			r := signedRequest(t, a, body)
			r.Body = append(append([]byte(nil), body...), ' ')
			return r
		}},
		{name: "token does not replace the signature", req: func() *channels.Request {
			h := http.Header{}
			h.Set(HeaderToken, "anything")
			return &channels.Request{Header: h, Body: body}
		}},
		{name: "nil request", req: func() *channels.Request { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := in.Verify(context.Background(), tt.req())
			if tt.wantOK {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, channels.ErrUnauthorized)
		})
	}
}

func TestVerifyToken(t *testing.T) {
	in := tokenInbound(t, "s3cret-token")
	body := channelstest.ReadFixture(t, "message_handler_dm.json")
	tests := []struct {
		name   string
		header string
		query  string
		wantOK bool
	}{
		{name: "header", header: "s3cret-token", wantOK: true},
		{name: "query", query: "s3cret-token", wantOK: true},
		{name: "header wins over query", header: "wrong", query: "s3cret-token"},
		{name: "wrong header", header: "s3cret-tokeN"},
		{name: "prefix of the token", query: "s3cret"},
		{name: "longer than the token", header: "s3cret-token-and-more"},
		{name: "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set(HeaderToken, tt.header)
			}
			q := url.Values{}
			if tt.query != "" {
				q.Set(QueryToken, tt.query)
			}
			err := in.Verify(context.Background(), &channels.Request{Header: h, Query: q, Body: body})
			if tt.wantOK {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, channels.ErrUnauthorized)
		})
	}
}

func TestParse(t *testing.T) {
	a, _ := testKeys(t)
	in := rsaInbound(t, a, nil)
	scottDM := envelope.Conversation{ID: "CT_2243226337559778047_661211447-B2", Type: envelope.ConversationDM, Title: "Support Bot"}
	scott := envelope.Sender{ID: "661211447", DisplayName: "Scott Fisher"}

	tests := []struct {
		name    string
		fixture string
		want    *envelope.Message // nil: no message
	}{
		{name: "message handler in the bot chat", fixture: "message_handler_dm.json", want: &envelope.Message{
			SourceMessageID: "1715753217915_53719000002124012",
			Conversation:    scottDM,
			Sender:          scott,
			Text:            "Hi, where is my order #4711?",
			SentAt:          time.Date(2024, 5, 15, 6, 6, 57, 915e6, time.UTC),
		}},
		{name: "mention handler in a channel, extension event shape", fixture: "mention_handler_channel.json", want: &envelope.Message{
			SourceMessageID: "1715753249321_123456456",
			Conversation:    envelope.Conversation{ID: "CT_1290812367000210002_123456456", Type: envelope.ConversationChannel, Title: "billing"},
			Sender:          envelope.Sender{ID: "130720038", DisplayName: "Dana Lee"},
			Text:            "@Support Bot please refund order 4711",
			SentAt:          time.Date(2024, 5, 15, 6, 7, 29, 321e6, time.UTC),
		}},
		{name: "message with files and no message id", fixture: "message_handler_file.json", want: &envelope.Message{
			// sha256(chat id \x00 time \x00 text)
			SourceMessageID: "e64ab0edc93a2fb7c5480eadf371d3ec98d0300ff0d9db28c6fa39e4a30a5948",
			Conversation:    envelope.Conversation{ID: "CT_2243226337559778047_661211447-B2", Type: envelope.ConversationDM, Title: "Scott Fisher"},
			Sender:          scott,
			Text:            "invoice attached",
			Attachments: []envelope.Attachment{
				{Kind: envelope.KindFile, Name: "invoice-4711.pdf", MimeType: "application/pdf", Size: 48213, Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://cliq.zoho.com/company/123456456/api/v2/files/d83c6f2a1b4e"}},
				{Kind: envelope.KindImage, Name: "photo.jpg", MimeType: "image/jpeg", Size: 20480, Status: envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{URL: "https://cliq.zoho.com/company/123456456/api/v2/files/77aa01be9c2d"}},
			},
			SentAt: time.Date(2024, 5, 15, 6, 8, 20, 123e6, time.UTC),
		}},
		{name: "deluge-forwarded message as a string", fixture: "message_forwarded_deluge.json", want: &envelope.Message{
			// sha256(chat id \x00 \x00 text): no id, no time
			SourceMessageID: "f6270a2a67a487b118f3c0fe9e943bd01f968b80c4c0fbe279aac2dcbb8aea8d",
			Conversation:    scottDM,
			Sender:          scott,
			Text:            "is the refund done?",
		}},
		{name: "welcome handler stores nothing", fixture: "welcome_handler.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := channelstest.ReadFixture(t, tt.fixture)
			req := signedRequest(t, a, body)
			require.NoError(t, in.Verify(context.Background(), req))
			p, err := in.Parse(context.Background(), req)
			require.NoError(t, err)
			require.Nil(t, p.Reply)
			require.Empty(t, p.Statuses)
			if tt.want == nil {
				require.Empty(t, p.Messages)
				return
			}
			require.Len(t, p.Messages, 1)
			got := p.Messages[0]
			require.Equal(t, string(body), string(got.Raw))
			got.Raw = nil
			want := *tt.want
			want.ChannelType = envelope.ChannelZohoCliq
			require.Equal(t, want, got)
		})
	}
}

func TestParseConfiguredMapping(t *testing.T) {
	a, _ := testKeys(t)
	in := rsaInbound(t, a, map[string]any{
		"dedup_field":      "meta.delivery_id",
		"message_handlers": []string{"chat_message"},
		"field_paths": map[string][]string{
			"event":          {"event"},
			"text":           {"msg.body"},
			"sender_id":      {"from.zuid"},
			"sender_name":    {"from.display"},
			"sender_is_bot":  {"from.bot"},
			"thread_id":      {"msg.thread.0.id"},
			"reply_to":       {"msg.quoted"},
			"attachments":    {"msg.files"},
			"attachment_url": {"link"},
		},
		"conversation_types": map[string]string{"chat": "dm"},
	})
	body := []byte(`{"event":"chat_message","meta":{"delivery_id":987654321012345678901},
		"chat":{"id":"CT_1","type":"Chat"},"from":{"zuid":42,"display":"Build Bot","bot":true},
		"msg":{"body":"deploy done","thread":[{"id":"TH_9"}],"quoted":"M_1","files":[{"link":"https://x/y.png","type":"image"},{"name":"no-url"}]}}`)
	p, err := in.Parse(context.Background(), &channels.Request{Body: body})
	require.NoError(t, err)
	want := envelope.Message{
		ChannelType:     envelope.ChannelZohoCliq,
		SourceMessageID: "987654321012345678901",
		Conversation:    envelope.Conversation{ID: "CT_1", Type: envelope.ConversationDM},
		ThreadID:        "TH_9",
		ReplyToSourceID: "M_1",
		Sender:          envelope.Sender{ID: "42", DisplayName: "Build Bot", IsBot: true},
		Text:            "deploy done",
		Attachments: []envelope.Attachment{{Kind: envelope.KindImage, Status: envelope.AttachmentPending,
			Source: &envelope.AttachmentSource{URL: "https://x/y.png"}}},
	}
	require.Len(t, p.Messages, 1)
	got := p.Messages[0]
	got.Raw = nil
	require.Equal(t, want, got)
}

func TestParseErrors(t *testing.T) {
	in := tokenInbound(t, "x")
	tests := []struct {
		name        string
		contentType string
		body        string
		wantMedia   bool
	}{
		{name: "malformed JSON", body: `{"handler":"message_handler",`},
		{name: "empty body", body: ``},
		{name: "array body", body: `[{"handler":"message_handler"}]`},
		{name: "trailing data", body: `{"handler":"message_handler"} {}`},
		{name: "no handler", body: `{"message":{"text":"hi"},"user":{"id":"1"},"chat":{"id":"c"}}`},
		{name: "handler not a string", body: `{"handler":{"name":"x"},"chat":{"id":"c"}}`},
		{name: "no chat id", body: `{"handler":"message_handler","message":{"text":"hi"},"user":{"id":"1"}}`},
		{name: "chat id is an object", body: `{"handler":"message_handler","user":{"id":"1"},"chat":{"id":{}}}`},
		{name: "no user id", body: `{"handler":"message_handler","message":{"text":"hi"},"chat":{"id":"c"}}`},
		{name: "form content type", contentType: "application/x-www-form-urlencoded", body: `{}`, wantMedia: true},
		{name: "xml content type", contentType: "text/xml", body: `{}`, wantMedia: true},
		{name: "unparsable content type", contentType: "/", body: `{}`, wantMedia: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.contentType != "" {
				h.Set("Content-Type", tt.contentType)
			}
			p, err := in.Parse(context.Background(), &channels.Request{Header: h, Body: []byte(tt.body)})
			require.Nil(t, p)
			if tt.wantMedia {
				require.ErrorIs(t, err, channels.ErrUnsupportedMediaType)
				return
			}
			var bad *channels.BadRequestError
			require.ErrorAs(t, err, &bad)
		})
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{in: "1715753217915", want: time.Date(2024, 5, 15, 6, 6, 57, 915e6, time.UTC)},
		{in: "1715753217", want: time.Date(2024, 5, 15, 6, 6, 57, 0, time.UTC)},
		{in: "1.715753217915e12", want: time.Date(2024, 5, 15, 6, 6, 57, 915e6, time.UTC)},
		{in: "2024-05-15T08:06:57.915+02:00", want: time.Date(2024, 5, 15, 6, 6, 57, 915e6, time.UTC)},
		{in: ""},
		{in: "0"},
		{in: "-5"},
		{in: "1e300"},
		{in: "NaN"},
		{in: "yesterday"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Equal(t, tt.want, parseTime(tt.in))
		})
	}
}

// TestDescribeConfig: the mapping in force is the defaults merged with the
// account's overrides, without secrets.
func TestDescribeConfig(t *testing.T) {
	t.Parallel()
	ch := New(Options{})
	got, err := ch.DescribeConfig(json.RawMessage(`{"message_handlers":["message_handler"],"conversation_types":{"org":"group"}}`))
	require.NoError(t, err)
	d := got.(map[string]any)
	require.Equal(t, ModeToken, d["mode"])
	require.Equal(t, []string{"message_handler"}, d["message_handlers"])
	require.Equal(t, DefaultFieldPaths(), d["field_paths"])
	require.Equal(t, envelope.ConversationGroup, d["conversation_types"].(map[string]string)["org"])
	require.Equal(t, envelope.ConversationChannel, d["conversation_types"].(map[string]string)["thread"], "a channel thread")
	require.Equal(t, DefaultAPIBaseURL, d["api_base_url"])
	require.Contains(t, d["source"], "zcatalyst-cli")
	_, err = ch.DescribeConfig(json.RawMessage(`{"mode":"rsa"}`))
	require.ErrorIs(t, err, channels.ErrInvalidConfig)
}
