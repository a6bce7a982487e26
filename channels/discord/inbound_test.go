package discord

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

// testNow is the request time used by the tests: shortly after the fixtures'
// interaction ids were minted.
var testNow = time.Date(2024, 5, 15, 6, 8, 0, 0, time.UTC)

func newKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return pub, priv
}

func newTestInbound(t testing.TB, pub ed25519.PublicKey) channels.Inbound {
	t.Helper()
	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: hex.EncodeToString(pub)})
	require.NoError(t, err)
	return in
}

func signedRequest(priv ed25519.PrivateKey, ts time.Time, body []byte) *channels.Request {
	tsStr := strconv.FormatInt(ts.Unix(), 10)
	sig := ed25519.Sign(priv, append([]byte(tsStr), body...))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderSignature, hex.EncodeToString(sig))
	h.Set(HeaderTimestamp, tsStr)
	return &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow}
}

func TestChannel(t *testing.T) {
	ch := New(Options{})
	require.Equal(t, envelope.ChannelDiscord, ch.Type())
	require.Equal(t, channels.Capabilities{Edit: true, Attachments: true, Interactions: true, Reactions: true}, channels.CapabilitiesOf(ch))
	require.Equal(t, DefaultAPIBaseURL, ch.opts.APIBaseURL)
	require.NotNil(t, ch.opts.HTTPClient)
	require.Equal(t, DefaultTimestampTolerance, ch.opts.TimestampTolerance)
	require.Equal(t, "http://fake", New(Options{APIBaseURL: "http://fake/"}).opts.APIBaseURL)
}

func TestNewInboundConfig(t *testing.T) {
	pub, _ := newKey(t)
	keyHex := hex.EncodeToString(pub)
	tests := []struct {
		name    string
		acct    channels.Account
		wantErr bool
	}{
		{name: "key only", acct: channels.Account{WebhookSecret: keyHex}},
		{name: "uppercase key with spaces", acct: channels.Account{WebhookSecret: " " + hexUpper(keyHex) + "\n"}},
		{name: "full config", acct: channels.Account{
			WebhookSecret: keyHex,
			Settings:      json.RawMessage(`{"application_id":"1239870000000000000"}`),
			Credentials:   json.RawMessage(`{"bot_token":"MTIz.abc.def"}`),
		}},
		{name: "null settings", acct: channels.Account{WebhookSecret: keyHex, Settings: json.RawMessage(`null`)}},
		{name: "missing key", acct: channels.Account{}, wantErr: true},
		{name: "gateway only, no key", acct: channels.Account{Credentials: json.RawMessage(`{"bot_token":"MTIz.abc.def"}`)}},
		{name: "no key, gateway off", acct: channels.Account{Credentials: json.RawMessage(`{"bot_token":"MTIz.abc.def"}`),
			Settings: json.RawMessage(`{"gateway":false}`)}, wantErr: true},
		{name: "key not hex", acct: channels.Account{WebhookSecret: "zz" + keyHex[2:]}, wantErr: true},
		{name: "key too short", acct: channels.Account{WebhookSecret: keyHex[:62]}, wantErr: true},
		{name: "key too long", acct: channels.Account{WebhookSecret: keyHex + "00"}, wantErr: true},
		{name: "settings not JSON", acct: channels.Account{WebhookSecret: keyHex, Settings: json.RawMessage(`{`)}, wantErr: true},
		{name: "settings not object", acct: channels.Account{WebhookSecret: keyHex, Settings: json.RawMessage(`[1]`)}, wantErr: true},
		{name: "credentials not JSON", acct: channels.Account{WebhookSecret: keyHex, Credentials: json.RawMessage(`nope`)}, wantErr: true},
		{name: "application id not snowflake", acct: channels.Account{WebhookSecret: keyHex, Settings: json.RawMessage(`{"application_id":"abc"}`)}, wantErr: true},
		{name: "application id wrong type", acct: channels.Account{WebhookSecret: keyHex, Settings: json.RawMessage(`{"application_id":12}`)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := New(Options{}).NewInbound(tt.acct)
			if tt.wantErr {
				require.ErrorIs(t, err, channels.ErrInvalidConfig)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, in)
		})
	}
}

// A Gateway-only account (no public key) refuses every interaction.
func TestGatewayOnlyRefusesInteractions(t *testing.T) {
	in, err := New(Options{}).NewInbound(channels.Account{Credentials: json.RawMessage(`{"bot_token":"MTIz.abc.def"}`)})
	require.NoError(t, err)
	err = in.Verify(context.Background(), &channels.Request{Header: http.Header{
		HeaderSignature: {strings.Repeat("00", 64)}, HeaderTimestamp: {"1700000000"}}, Body: []byte(`{"type":1}`)})
	require.ErrorIs(t, err, channels.ErrUnauthorized)
	require.Contains(t, err.Error(), "Gateway only")
}

func hexUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestVerify(t *testing.T) {
	pub, priv := newKey(t)
	_, otherPriv := newKey(t)
	in := newTestInbound(t, pub)
	body := channelstest.ReadFixture(t, "command_guild.json")

	tests := []struct {
		name   string
		req    func() *channels.Request
		wantOK bool
	}{
		{name: "valid", wantOK: true, req: func() *channels.Request {
			return signedRequest(priv, testNow.Add(-2*time.Second), body)
		}},
		{name: "valid ping", wantOK: true, req: func() *channels.Request {
			return signedRequest(priv, testNow, channelstest.ReadFixture(t, "ping.json"))
		}},
		{name: "valid at edge of tolerance", wantOK: true, req: func() *channels.Request {
			return signedRequest(priv, testNow.Add(-5*time.Minute), body)
		}},
		{name: "request clock defaults to options clock", wantOK: true, req: func() *channels.Request {
			r := signedRequest(priv, time.Now(), body)
			r.Now = time.Time{}
			return r
		}},
		{name: "missing signature", req: func() *channels.Request {
			r := signedRequest(priv, testNow, body)
			r.Header.Del(HeaderSignature)
			return r
		}},
		{name: "missing timestamp", req: func() *channels.Request {
			r := signedRequest(priv, testNow, body)
			r.Header.Del(HeaderTimestamp)
			return r
		}},
		{name: "no headers", req: func() *channels.Request {
			return &channels.Request{Body: body, Now: testNow}
		}},
		{name: "signature not hex", req: func() *channels.Request {
			r := signedRequest(priv, testNow, body)
			r.Header.Set(HeaderSignature, string(make([]byte, 128)))
			return r
		}},
		{name: "signature too short", req: func() *channels.Request {
			r := signedRequest(priv, testNow, body)
			r.Header.Set(HeaderSignature, r.Header.Get(HeaderSignature)[:126])
			return r
		}},
		{name: "signed by another key", req: func() *channels.Request {
			return signedRequest(otherPriv, testNow, body)
		}},
		{name: "body tampered", req: func() *channels.Request {
			r := signedRequest(priv, testNow, body)
			r.Body = append([]byte(nil), body...)
			r.Body[len(r.Body)-2] = ' '
			return r
		}},
		{name: "timestamp swapped", req: func() *channels.Request {
			r := signedRequest(priv, testNow, body)
			r.Header.Set(HeaderTimestamp, strconv.FormatInt(testNow.Unix()-1, 10))
			return r
		}},
		{name: "timestamp not a number", req: func() *channels.Request {
			r := signedRequest(priv, testNow, body)
			r.Header.Set(HeaderTimestamp, "yesterday")
			return r
		}},
		{name: "stale timestamp", req: func() *channels.Request {
			return signedRequest(priv, testNow.Add(-5*time.Minute-time.Second), body)
		}},
		{name: "timestamp in the future", req: func() *channels.Request {
			return signedRequest(priv, testNow.Add(6*time.Minute), body)
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

func TestParse(t *testing.T) {
	pub, priv := newKey(t)
	in := newTestInbound(t, pub)
	ada := envelope.Sender{ID: "53908232506183680", DisplayName: "Ada L."}
	support := envelope.Conversation{ID: "881207955029110858", Type: envelope.ConversationChannel, Title: "support"}
	supportNoTitle := envelope.Conversation{ID: "881207955029110858", Type: envelope.ConversationChannel}

	tests := []struct {
		name      string
		fixture   string
		wantReply string
		want      *envelope.Message // nil: no message
	}{
		{name: "ping", fixture: "ping.json", wantReply: `{"type":1}`},
		{name: "autocomplete", fixture: "autocomplete.json", wantReply: `{"type":8,"data":{"choices":[]}}`},
		{
			name: "slash command with subcommand and attachment in a guild", fixture: "command_guild.json",
			wantReply: `{"type":5}`,
			want: &envelope.Message{
				SourceMessageID: "1240183625913974784",
				Conversation:    support,
				Sender:          ada,
				Text:            "/ticket open title=Printer on fire priority=2 urgent=true screenshot=fire.png",
				Attachments: []envelope.Attachment{{
					Kind:     envelope.KindImage,
					Name:     "fire.png",
					MimeType: "image/png",
					Size:     48213,
					Status:   envelope.AttachmentPending,
					Source: &envelope.AttachmentSource{
						URL: "https://cdn.discordapp.com/ephemeral-attachments/1239870000000000100/1240183625834283008/fire.png?ex=6645a0f1&is=66444f71&hm=5a6c1d",
					},
				}},
				SentAt: time.Date(2024, 5, 15, 6, 6, 57, 915e6, time.UTC),
			},
		},
		{
			name: "slash command in a DM", fixture: "command_dm.json",
			wantReply: `{"type":5}`,
			want: &envelope.Message{
				SourceMessageID: "1240183630452506624",
				Conversation:    envelope.Conversation{ID: "1190000000000000001", Type: envelope.ConversationDM},
				Sender:          envelope.Sender{ID: "80351110224678912", DisplayName: "nelly"},
				Text:            "/ask question=what is the refund policy?",
				SentAt:          time.Date(2024, 5, 15, 6, 6, 58, 997e6, time.UTC),
			},
		},
		{
			name: "button", fixture: "component_button.json",
			wantReply: `{"type":6}`,
			want: &envelope.Message{
				SourceMessageID: "1240183701234567890",
				Conversation:    support,
				ReplyToSourceID: "1240183690000000000",
				Sender:          ada,
				Text:            "approve_refund:4711",
				SentAt:          time.Date(2024, 5, 15, 6, 7, 15, 873e6, time.UTC),
				Kind:            envelope.KindInteraction,
				Interaction:     &envelope.Interaction{ActionID: "approve_refund", Value: "4711", MessageID: "1240183690000000000"},
			},
		},
		{
			name: "a select MIO rendered: the choice is the value", fixture: "component_select_region.json",
			wantReply: `{"type":6}`,
			want: &envelope.Message{
				SourceMessageID: "1240183712345678902",
				Conversation:    supportNoTitle,
				ReplyToSourceID: "1240183690000000001",
				Sender:          envelope.Sender{ID: "53908232506183680", DisplayName: "ada"},
				Text:            "region=eu-west",
				SentAt:          time.Date(2024, 5, 15, 6, 7, 18, 522e6, time.UTC),
				Kind:            envelope.KindInteraction,
				Interaction:     &envelope.Interaction{ActionID: "region", Value: "eu-west", Values: []string{"eu-west"}, MessageID: "1240183690000000001"},
			},
		},
		{
			name: "string select", fixture: "component_select.json",
			wantReply: `{"type":6}`,
			want: &envelope.Message{
				SourceMessageID: "1240183712345678901",
				Conversation:    supportNoTitle,
				ReplyToSourceID: "1240183690000000001",
				Sender:          envelope.Sender{ID: "53908232506183680", DisplayName: "ada"},
				Text:            "pick_topics=billing,shipping",
				SentAt:          time.Date(2024, 5, 15, 6, 7, 18, 522e6, time.UTC),
				Kind:            envelope.KindInteraction,
				Interaction:     &envelope.Interaction{ActionID: "pick_topics", Values: []string{"billing", "shipping"}, MessageID: "1240183690000000001"},
			},
		},
		{
			name: "modal submit", fixture: "modal_submit.json",
			wantReply: `{"type":5}`,
			want: &envelope.Message{
				SourceMessageID: "1240183723456789012",
				Conversation:    supportNoTitle,
				Sender:          ada,
				Text:            "feedback_modal rating=5 comment=Fast and friendly",
				SentAt:          time.Date(2024, 5, 15, 6, 7, 21, 171e6, time.UTC),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := channelstest.ReadFixture(t, tt.fixture)
			req := signedRequest(priv, testNow, body)
			require.NoError(t, in.Verify(context.Background(), req))
			p, err := in.Parse(context.Background(), req)
			require.NoError(t, err)
			require.Equal(t, &channels.Reply{Status: http.StatusOK, ContentType: "application/json", Body: []byte(tt.wantReply)}, p.Reply)
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
			want.ChannelType = envelope.ChannelDiscord
			require.Equal(t, want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	pub, _ := newKey(t)
	in := newTestInbound(t, pub)
	guild := `"guild_id":"1","channel_id":"2","member":{"user":{"id":"3","username":"u"}}`
	tests := []struct {
		name        string
		contentType string
		body        string
		wantMedia   bool
	}{
		{name: "malformed JSON", body: `{"type":2,`},
		{name: "not an object", body: `[1,2]`},
		{name: "empty body", body: ``},
		{name: "type missing", body: `{"id":"1240183625913974784"}`},
		{name: "type wrong kind", body: `{"type":"2"}`},
		{name: "unknown type", body: `{"type":9,"id":"1240183625913974784"}`},
		{name: "id missing", body: `{"type":2,"data":{"name":"x"},` + guild + `}`},
		{name: "id not a snowflake", body: `{"type":2,"id":"abc","data":{"name":"x"},` + guild + `}`},
		{name: "data missing", body: `{"type":2,"id":"1240183625913974784",` + guild + `}`},
		{name: "command name missing", body: `{"type":2,"id":"1240183625913974784","data":{},` + guild + `}`},
		{name: "component custom_id missing", body: `{"type":3,"id":"1240183625913974784","data":{"component_type":2},` + guild + `}`},
		{name: "modal custom_id missing", body: `{"type":5,"id":"1240183625913974784","data":{"components":[]},` + guild + `}`},
		{name: "channel missing", body: `{"type":2,"id":"1240183625913974784","data":{"name":"x"},"user":{"id":"3"}}`},
		{name: "user missing", body: `{"type":2,"id":"1240183625913974784","data":{"name":"x"},"channel_id":"2"}`},
		{name: "user without id", body: `{"type":2,"id":"1240183625913974784","data":{"name":"x"},"channel_id":"2","member":{"user":{"username":"u"}}}`},
		{name: "form content type", contentType: "application/x-www-form-urlencoded", body: `{"type":1}`, wantMedia: true},
		{name: "text content type", contentType: "text/plain; charset=utf-8", body: `{"type":1}`, wantMedia: true},
		{name: "unparsable content type", contentType: "application/json; =", body: `{"type":1}`, wantMedia: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.contentType != "" {
				h.Set("Content-Type", tt.contentType)
			}
			p, err := in.Parse(context.Background(), &channels.Request{Header: h, Body: []byte(tt.body), Now: testNow})
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

func TestParseGroupDMAndContextMenu(t *testing.T) {
	pub, _ := newKey(t)
	in := newTestInbound(t, pub)
	body := []byte(`{"type":2,"id":"1240183625913974784","channel":{"id":"77","type":3,"name":"trip"},
		"user":{"id":"9","username":"bob","bot":true},
		"data":{"name":"Summarize","type":3,"target_id":"1240183600000000000"}}`)
	p, err := in.Parse(context.Background(), &channels.Request{Body: body})
	require.NoError(t, err)
	require.Len(t, p.Messages, 1)
	m := p.Messages[0]
	require.Equal(t, envelope.Conversation{ID: "77", Type: envelope.ConversationGroup, Title: "trip"}, m.Conversation)
	require.Equal(t, envelope.Sender{ID: "9", DisplayName: "bob", IsBot: true}, m.Sender)
	require.Equal(t, "1240183600000000000", m.ReplyToSourceID)
	require.Equal(t, "/Summarize target=1240183600000000000", m.Text)
}

func TestParseModalFileUpload(t *testing.T) {
	pub, _ := newKey(t)
	in := newTestInbound(t, pub)
	body := []byte(`{"type":5,"id":"1240183625913974784","channel_id":"2","user":{"id":"9","username":"bob"},
		"data":{"custom_id":"upload","components":[
			{"type":18,"component":{"type":19,"custom_id":"files","values":["111","222"]}},
			{"type":18,"component":{"type":3,"custom_id":"kind","values":["invoice"]}}],
		"resolved":{"attachments":{
			"111":{"id":"111","filename":"a.pdf","content_type":"application/pdf","size":10,"url":"https://cdn.discordapp.com/attachments/2/111/a.pdf"},
			"222":{"id":"222","filename":"b.mp3","content_type":"audio/mpeg","proxy_url":"https://media.discordapp.net/attachments/2/222/b.mp3"}}}}}`)
	p, err := in.Parse(context.Background(), &channels.Request{Body: body})
	require.NoError(t, err)
	require.Len(t, p.Messages, 1)
	m := p.Messages[0]
	require.Equal(t, "upload files=111,222 kind=invoice", m.Text)
	want := []envelope.Attachment{
		{Kind: envelope.KindFile, Name: "a.pdf", MimeType: "application/pdf", Size: 10, Status: envelope.AttachmentPending,
			Source: &envelope.AttachmentSource{URL: "https://cdn.discordapp.com/attachments/2/111/a.pdf"}},
		{Kind: envelope.KindAudio, Name: "b.mp3", MimeType: "audio/mpeg", Status: envelope.AttachmentPending,
			Source: &envelope.AttachmentSource{URL: "https://media.discordapp.net/attachments/2/222/b.mp3"}},
	}
	require.Equal(t, want, m.Attachments)
}

func TestSnowflakeAt(t *testing.T) {
	t.Parallel()
	// Discord's documented example: 175928847299117063 was created at
	// 2016-04-30 11:18:25.796 UTC.
	at := time.Date(2016, 4, 30, 11, 18, 25, 796e6, time.UTC)
	got := SnowflakeAt(at)
	require.True(t, !snowflakeLess("175928847299117063", got) && snowflakeLess(SnowflakeAt(at.Add(-time.Millisecond)), "175928847299117063"))
	back, ok := snowflakeTime(got)
	require.True(t, ok)
	require.Equal(t, at, back)
	require.Equal(t, "0", SnowflakeAt(time.Unix(0, 0)))
}
