package whatsapp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

const (
	testAppSecret   = "8d2f5c1e9a7b4063b1c0e5d7a9f3b2c4"
	testVerifyToken = "mio-verify-7f3a"
)

func newTestInbound(t *testing.T) channels.Inbound {
	t.Helper()
	in, err := New(Options{}).NewInbound(channels.Account{
		Credentials:   json.RawMessage(`{"verify_token":"` + testVerifyToken + `","access_token":"EAAJB..."}`),
		WebhookSecret: testAppSecret,
	})
	require.NoError(t, err)
	return in
}

func postRequest(body []byte) *channels.Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(SignatureHeader, Sign(testAppSecret, body))
	return &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: time.Unix(1749420000, 0)}
}

func getRequest(query string) *channels.Request {
	q, _ := url.ParseQuery(query)
	return &channels.Request{Method: http.MethodGet, Header: http.Header{}, Query: q, Now: time.Unix(1749420000, 0)}
}

func TestChannel(t *testing.T) {
	t.Parallel()
	ch := New(Options{})
	require.Equal(t, envelope.ChannelWhatsApp, ch.Type())
	require.Equal(t, channels.Capabilities{Attachments: true, Receipts: true, Interactions: true, Reactions: true}, channels.CapabilitiesOf(ch))
	require.Equal(t, DefaultAPIBaseURL, ch.opts.APIBaseURL)
	require.NotNil(t, ch.opts.HTTPClient)
}

func TestSignKnownAnswer(t *testing.T) {
	t.Parallel()
	// Expected values computed independently with
	// openssl dgst -sha256 -hmac <secret>.
	require.Equal(t,
		"sha256=e5ee0179401514b69fc522026e35ee242a8f073e671dde6fa445fec59f8df846",
		Sign(testAppSecret, channelstest.ReadFixture(t, "text.json")))
	require.Equal(t,
		"sha256=687c236a5d344c514fb5ac4de9ddb722509defe7d86360cab7a1bf0bebc1ed5b",
		Sign(testAppSecret, []byte(`{"object":"whatsapp_business_account","entry":[]}`)))
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
			name: "app secret only",
			acct: channels.Account{WebhookSecret: "s"},
			want: Config{AppSecret: "s"},
		},
		{
			name: "full",
			acct: channels.Account{
				Settings:      json.RawMessage(`{"note":"ignored"}`),
				Credentials:   json.RawMessage(`{"verify_token":"v","access_token":"a"}`),
				WebhookSecret: "s",
			},
			want: Config{AccessToken: "a", AppSecret: "s", VerifyToken: "v"},
		},
		{
			name: "phone number id from settings",
			acct: channels.Account{ExternalID: "111", Settings: json.RawMessage(`{"phone_number_id":"222"}`), WebhookSecret: "s"},
			want: Config{AppSecret: "s", PhoneNumberID: "222"},
		},
		{
			name: "phone number id from the external id",
			acct: channels.Account{ExternalID: "111", WebhookSecret: "s"},
			want: Config{AppSecret: "s", PhoneNumberID: "111"},
		},
		{
			name:    "phone number id of wrong type",
			acct:    channels.Account{Settings: json.RawMessage(`{"phone_number_id":222}`), WebhookSecret: "s"},
			wantErr: true,
		},
		{
			name: "null settings and credentials",
			acct: channels.Account{Settings: json.RawMessage(`null`), Credentials: json.RawMessage(`null`), WebhookSecret: "s"},
			want: Config{AppSecret: "s"},
		},
		{name: "missing app secret", acct: channels.Account{Credentials: json.RawMessage(`{"verify_token":"v"}`)}, wantErr: true},
		{
			name:    "credentials not JSON",
			acct:    channels.Account{Credentials: json.RawMessage(`verify_token=v`), WebhookSecret: "s"},
			wantErr: true,
		},
		{
			name:    "verify token of wrong type",
			acct:    channels.Account{Credentials: json.RawMessage(`{"verify_token":1}`), WebhookSecret: "s"},
			wantErr: true,
		},
		{
			name:    "settings an array",
			acct:    channels.Account{Settings: json.RawMessage(`[]`), WebhookSecret: "s"},
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

func TestVerifySignature(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	body := channelstest.ReadFixture(t, "text.json")
	good := Sign(testAppSecret, body)
	tests := []struct {
		name   string
		mutate func(r *channels.Request)
		ok     bool
	}{
		{name: "valid", mutate: func(*channels.Request) {}, ok: true},
		{name: "valid, uppercase hex and prefix", mutate: func(r *channels.Request) { r.Header.Set(SignatureHeader, strings.ToUpper(good)) }, ok: true},
		{name: "valid, method left empty", mutate: func(r *channels.Request) { r.Method = "" }, ok: true},
		{name: "missing header", mutate: func(r *channels.Request) { r.Header.Del(SignatureHeader) }},
		{name: "no prefix", mutate: func(r *channels.Request) { r.Header.Set(SignatureHeader, strings.TrimPrefix(good, "sha256=")) }},
		{name: "sha1 prefix", mutate: func(r *channels.Request) { r.Header.Set(SignatureHeader, "sha1="+strings.TrimPrefix(good, "sha256=")) }},
		{name: "not hex", mutate: func(r *channels.Request) { r.Header.Set(SignatureHeader, "sha256=zz") }},
		{name: "truncated digest", mutate: func(r *channels.Request) { r.Header.Set(SignatureHeader, good[:len(good)-2]) }},
		{name: "wrong secret", mutate: func(r *channels.Request) { r.Header.Set(SignatureHeader, Sign("other", body)) }},
		{name: "body changed", mutate: func(r *channels.Request) { r.Body = append(append([]byte(nil), body...), ' ') }},
		{name: "prefix only", mutate: func(r *channels.Request) { r.Header.Set(SignatureHeader, "sha256=") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := postRequest(body)
			tt.mutate(req)
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
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	noToken, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testAppSecret})
	require.NoError(t, err)

	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		req := getRequest("hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=" + testVerifyToken)
		require.NoError(t, in.Verify(context.Background(), req))
		got, err := in.Parse(context.Background(), req)
		require.NoError(t, err)
		require.Empty(t, got.Messages)
		require.Equal(t, &channels.Reply{Status: http.StatusOK, ContentType: "text/plain; charset=utf-8", Body: []byte("1158201444")}, got.Reply)
	})

	unauthorized := []struct {
		name  string
		in    channels.Inbound
		query string
	}{
		{name: "wrong token", in: in, query: "hub.mode=subscribe&hub.challenge=1&hub.verify_token=nope"},
		{name: "missing token", in: in, query: "hub.mode=subscribe&hub.challenge=1"},
		{name: "empty token", in: in, query: "hub.mode=subscribe&hub.challenge=1&hub.verify_token="},
		{name: "wrong mode", in: in, query: "hub.mode=unsubscribe&hub.challenge=1&hub.verify_token=" + testVerifyToken},
		{name: "missing mode", in: in, query: "hub.challenge=1&hub.verify_token=" + testVerifyToken},
		{name: "no query", in: in, query: ""},
		{name: "account has no verify token", in: noToken, query: "hub.mode=subscribe&hub.challenge=1&hub.verify_token=x"},
	}
	for _, tt := range unauthorized {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, tt.in.Verify(context.Background(), getRequest(tt.query)), channels.ErrUnauthorized)
		})
	}

	bad := []struct {
		name  string
		query string
	}{
		{name: "missing challenge", query: "hub.mode=subscribe&hub.verify_token=" + testVerifyToken},
		{name: "oversized challenge", query: "hub.mode=subscribe&hub.verify_token=" + testVerifyToken + "&hub.challenge=" + strings.Repeat("9", maxChallengeLen+1)},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := getRequest(tt.query)
			require.NoError(t, in.Verify(context.Background(), req))
			_, err := in.Parse(context.Background(), req)
			var br *channels.BadRequestError
			require.ErrorAs(t, err, &br)
		})
	}
}

func TestParseMessages(t *testing.T) {
	t.Parallel()
	sheena := envelope.Sender{ID: "16505551234", DisplayName: "Sheena Nelson"}
	sheenaDM := envelope.Conversation{ID: "16505551234", Type: envelope.ConversationDM}
	pending := func(kind, ref, name, mime string) envelope.Attachment {
		return envelope.Attachment{
			Kind: kind, Name: name, MimeType: mime,
			Status: envelope.AttachmentPending, Source: &envelope.AttachmentSource{Ref: ref},
		}
	}
	msg := func(id string, sentAt int64) envelope.Message {
		return envelope.Message{
			ChannelType: envelope.ChannelWhatsApp, SourceMessageID: id, PlatformMessageID: id,
			Conversation: sheenaDM, Sender: sheena, SentAt: time.Unix(sentAt, 0).UTC(),
		}
	}
	with := func(m envelope.Message, f func(*envelope.Message)) envelope.Message { f(&m); return m }
	tests := []struct {
		fixture string
		want    []envelope.Message
	}{
		{
			fixture: "text.json",
			want: []envelope.Message{with(msg("wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA", 1749416383), func(m *envelope.Message) {
				m.Text = "Does it come in another color?"
			})},
		},
		{
			fixture: "image.json",
			want: []envelope.Message{with(msg("wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzQUZCNTg3RkMxMDU3QzIzNjhERQA=", 1749416400), func(m *envelope.Message) {
				m.Text = "This is what arrived"
				m.Attachments = []envelope.Attachment{pending(envelope.KindImage, "1003383421387256", "", "image/jpeg")}
			})},
		},
		{
			fixture: "document.json",
			want: []envelope.Message{with(msg("wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzQjFEMjM0NTY3ODkwQUJDREVGAA==", 1749416500), func(m *envelope.Message) {
				m.Attachments = []envelope.Attachment{pending(envelope.KindFile, "2390237724668417", "invoice-2291.pdf", "application/pdf")}
			})},
		},
		{
			fixture: "reply_context.json",
			want: []envelope.Message{with(msg("wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzRjk1NDIxRjdCMEFFQjg5MjBCQgA=", 1749416600), func(m *envelope.Message) {
				m.Text = "Yes, the blue one please"
				m.ReplyToSourceID = "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBIyRkMzNTJBMjk4QTM3RjdDQkIA"
			})},
		},
		{
			fixture: "location.json",
			want: []envelope.Message{with(msg("wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzQ0E2MTk4RDVGNzM0MjdFOEY2RQA=", 1749416700), func(m *envelope.Message) {
				m.Text = "location: 37.483307,-122.148981 Meta Headquarters 1 Hacker Way, Menlo Park, CA 94025"
			})},
		},
		{
			fixture: "interactive_reply.json",
			want: []envelope.Message{with(msg("wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzR0dHR0dHR0dHR0dHR0dHR0dHAA==", 1749417000), func(m *envelope.Message) {
				m.Text = "Approve"
				m.ReplyToSourceID = "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBJBQkNERUZBQkNERUZBQkNERUYA"
				m.Kind = envelope.KindInteraction
				m.Interaction = &envelope.Interaction{ActionID: "approve-1", MessageID: m.ReplyToSourceID}
			})},
		},
		{
			fixture: "batch.json",
			want: []envelope.Message{
				with(msg("wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzQUFBQUFBQUFBQUFBQUFBQUFBAA==", 1749416800), func(m *envelope.Message) {
					m.Text = "first"
				}),
				{
					ChannelType:       envelope.ChannelWhatsApp,
					SourceMessageID:   "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABIYFDNCQkJCQkJCQkJCQkJCQkJCQkIA",
					PlatformMessageID: "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABIYFDNCQkJCQkJCQkJCQkJCQkJCQkIA",
					Conversation:      envelope.Conversation{ID: "5511987654321", Type: envelope.ConversationDM},
					Sender:            envelope.Sender{ID: "5511987654321", DisplayName: "João Silva"},
					Attachments:       []envelope.Attachment{pending(envelope.KindAudio, "1493512741585920", "", "audio/ogg; codecs=opus")},
					SentAt:            time.Unix(1749416801, 0).UTC(),
				},
				// An unsupported type is kept, with empty text.
				msg("wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzRERERERERERERERERERERERAA==", 1749416802),
			},
		},
		{
			// WhatsApp Business app numbers ("coexistence"): an edit names
			// its original, whose wamid MIO stored as its dedup key.
			fixture: "edit.json",
			want: []envelope.Message{with(msg("wamid.EDIT0001", 1749416900), func(m *envelope.Message) {
				m.PlatformMessageID, m.Edited, m.Text = "", true, "Does it come in another colour?"
				m.EditOf = envelope.NewEditRef("wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA")
			})},
		},
		{
			fixture: "revoke.json",
			want: []envelope.Message{with(msg("wamid.REVOKE0001", 1749416950), func(m *envelope.Message) {
				m.PlatformMessageID, m.Deleted = "", true
				m.EditOf = envelope.NewEditRef("wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA")
			})},
		},
		{fixture: "statuses.json"},
		{fixture: "account_update.json"},
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
			require.Len(t, got.Messages, len(tt.want))
			for i := range got.Messages {
				require.Equal(t, body, []byte(got.Messages[i].Raw))
				got.Messages[i].Raw = nil
			}
			if len(tt.want) > 0 {
				require.Equal(t, tt.want, got.Messages)
			}
		})
	}
}

func TestParseStatuses(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	tests := []struct {
		fixture string
		want    []channels.ProviderStatus
	}{
		{
			fixture: "statuses.json",
			want: []channels.ProviderStatus{
				{
					ProviderMessageID: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBJDQ0NDQ0NDQ0NDQ0NDQ0NDQ0MA", Status: "read",
					Timestamp: time.Unix(1749416900, 0).UTC(), RecipientID: "16505551234",
				},
				{
					ProviderMessageID: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBJFRUVFRUVFRUVFRUVFRUVFRUUA", Status: "failed",
					Timestamp: time.Unix(1749416901, 0).UTC(), RecipientID: "16505551234",
					Error: "Re-engagement message (code 131047)",
				},
				{
					ProviderMessageID: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBJGRkZGRkZGRkZGRkZGRkZGRkYA", Status: "sent",
					Timestamp: time.Unix(1749416902, 0).UTC(), RecipientID: "16505551234",
				},
			},
		},
		{
			fixture: "batch.json",
			want: []channels.ProviderStatus{{
				ProviderMessageID: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBJDQ0NDQ0NDQ0NDQ0NDQ0NDQ0MA", Status: "delivered",
				Timestamp: time.Unix(1749416795, 0).UTC(), RecipientID: "16505551234",
			}},
		},
		{fixture: "text.json"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			body := channelstest.ReadFixture(t, tt.fixture)
			got, err := in.Parse(context.Background(), postRequest(body))
			require.NoError(t, err)
			require.Len(t, got.Statuses, len(tt.want))
			for i := range got.Statuses {
				var obj map[string]any
				require.NoError(t, json.Unmarshal(got.Statuses[i].Raw, &obj), "Raw is the status object")
				require.Equal(t, tt.want[i].ProviderMessageID, obj["id"])
				got.Statuses[i].Raw = nil
			}
			if len(tt.want) > 0 {
				require.Equal(t, tt.want, got.Statuses)
			}
		})
	}
}

func TestParseEdgeCases(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	wrap := func(value string) string {
		return `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":` + value + `}]}]}`
	}
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, p *channels.Parsed)
	}{
		{
			name: "numeric timestamp and no contacts",
			body: wrap(`{"messages":[{"from":"1","id":"wamid.A","timestamp":1749416383,"type":"text","text":{"body":"hi"}}]}`),
			check: func(t *testing.T, p *channels.Parsed) {
				require.Equal(t, time.Unix(1749416383, 0).UTC(), p.Messages[0].SentAt)
				require.Empty(t, p.Messages[0].Sender.DisplayName)
			},
		},
		{
			name: "missing and out-of-range timestamps give zero time",
			body: wrap(`{"messages":[{"from":"1","id":"wamid.A","type":"text"},{"from":"1","id":"wamid.B","timestamp":"99999999999999"}],
				"statuses":[{"id":"wamid.C","status":"sent","timestamp":""}]}`),
			check: func(t *testing.T, p *channels.Parsed) {
				require.True(t, p.Messages[0].SentAt.IsZero())
				require.True(t, p.Messages[1].SentAt.IsZero())
				require.True(t, p.Statuses[0].Timestamp.IsZero())
			},
		},
		{
			name: "media without id keeps caption, no attachment",
			body: wrap(`{"messages":[{"from":"1","id":"wamid.A","type":"video","video":{"caption":"look"}}]}`),
			check: func(t *testing.T, p *channels.Parsed) {
				require.Equal(t, "look", p.Messages[0].Text)
				require.Empty(t, p.Messages[0].Attachments)
			},
		},
		{
			name: "sticker and video kinds",
			body: wrap(`{"messages":[
				{"from":"1","id":"wamid.A","type":"sticker","sticker":{"id":"s1","mime_type":"image/webp","animated":false}},
				{"from":"1","id":"wamid.B","type":"video","video":{"id":"v1","mime_type":"video/mp4","caption":"clip"}}]}`),
			check: func(t *testing.T, p *channels.Parsed) {
				require.Equal(t, envelope.KindSticker, p.Messages[0].Attachments[0].Kind)
				require.Equal(t, envelope.KindVideo, p.Messages[1].Attachments[0].Kind)
				require.Equal(t, "clip", p.Messages[1].Text)
			},
		},
		{
			name: "location without name or address, coordinates as strings",
			body: wrap(`{"messages":[{"from":"1","id":"wamid.A","type":"location","location":{"latitude":"-33.8","longitude":"151.2"}}]}`),
			check: func(t *testing.T, p *channels.Parsed) {
				require.Equal(t, "location: -33.8,151.2", p.Messages[0].Text)
			},
		},
		{
			name: "button, list reply and reaction",
			body: wrap(`{"messages":[
				{"from":"1","id":"wamid.A","type":"button","button":{"text":"Stop promotions","payload":"STOP"}},
				{"from":"1","id":"wamid.B","type":"interactive","interactive":{"type":"list_reply","list_reply":{"id":"r1","title":"Row 1"}}},
				{"from":"1","id":"wamid.C","type":"reaction","reaction":{"message_id":"wamid.X","emoji":"\ud83d\udc4d"}},
				{"from":"1","id":"wamid.D","type":"reaction","reaction":{"message_id":"wamid.X"}},
				{"from":"1","id":"wamid.E","type":"interactive","interactive":{"type":"button_reply","button_reply":{"id":"approve:run-42","title":"Approve"}},"context":{"from":"2","id":"wamid.Y"}}]}`),
			check: func(t *testing.T, p *channels.Parsed) {
				require.Equal(t, "Stop promotions", p.Messages[0].Text)
				require.Equal(t, &envelope.Interaction{ActionID: "STOP"}, p.Messages[0].Interaction)
				require.Equal(t, "Row 1", p.Messages[1].Text)
				require.Equal(t, &envelope.Interaction{ActionID: "r1"}, p.Messages[1].Interaction)
				require.Equal(t, "👍", p.Messages[2].Text)
				require.Equal(t, "wamid.X", p.Messages[2].ReplyToSourceID)
				require.Equal(t, envelope.KindReaction, p.Messages[2].Kind)
				require.Equal(t, &envelope.Reaction{Emoji: "👍", Added: true, MessageID: "wamid.X"}, p.Messages[2].Reaction)
				require.Equal(t, &envelope.Reaction{MessageID: "wamid.X"}, p.Messages[3].Reaction, "an empty emoji: the reaction taken back")
				require.Equal(t, &envelope.Interaction{ActionID: "approve", Value: "run-42", MessageID: "wamid.Y"}, p.Messages[4].Interaction)
			},
		},
		{
			name:  "forwarded context has no id",
			body:  wrap(`{"messages":[{"from":"1","id":"wamid.A","type":"text","text":{"body":"fw"},"context":{"forwarded":true}}]}`),
			check: func(t *testing.T, p *channels.Parsed) { require.Empty(t, p.Messages[0].ReplyToSourceID) },
		},
		{
			name:  "type and payload disagree: type wins",
			body:  wrap(`{"messages":[{"from":"1","id":"wamid.A","type":"text","image":{"id":"i"}}]}`),
			check: func(t *testing.T, p *channels.Parsed) { require.Empty(t, p.Messages[0].Attachments) },
		},
		{
			name:  "status error with message only and no code",
			body:  wrap(`{"statuses":[{"id":"wamid.A","status":"failed","errors":[{"message":"boom"},{"code":2,"title":"second"}]}]}`),
			check: func(t *testing.T, p *channels.Parsed) { require.Equal(t, "boom", p.Statuses[0].Error) },
		},
		{
			name: "status error with distinct title and message",
			body: wrap(`{"statuses":[{"id":"wamid.A","status":"failed","errors":[{"code":131026,"title":"Message undeliverable","message":"Receiver is incapable"}]}]}`),
			check: func(t *testing.T, p *channels.Parsed) {
				require.Equal(t, "Message undeliverable: Receiver is incapable (code 131026)", p.Statuses[0].Error)
			},
		},
		{
			name:  "unknown status value passes through",
			body:  wrap(`{"statuses":[{"id":"wamid.A","status":"deleted","timestamp":"1749416383"}]}`),
			check: func(t *testing.T, p *channels.Parsed) { require.Equal(t, "deleted", p.Statuses[0].Status) },
		},
		{
			name:  "null and empty values",
			body:  `{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":null},{"field":"messages"}]}]}`,
			check: func(t *testing.T, p *channels.Parsed) { require.Empty(t, p.Messages) },
		},
		{
			name:  "no entries",
			body:  `{"object":"whatsapp_business_account","entry":[]}`,
			check: func(t *testing.T, p *channels.Parsed) { require.Empty(t, p.Messages); require.Empty(t, p.Statuses) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := in.Parse(context.Background(), postRequest([]byte(tt.body)))
			require.NoError(t, err)
			tt.check(t, got)
		})
	}
}

func TestParseBadRequests(t *testing.T) {
	t.Parallel()
	in := newTestInbound(t)
	wrap := func(value string) string {
		return `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":` + value + `}]}]}`
	}
	tests := []struct {
		name   string
		body   string
		method string
	}{
		{name: "empty body", body: ""},
		{name: "not JSON", body: "object=whatsapp_business_account"},
		{name: "truncated", body: `{"object":"whatsapp_business_account","entry":[`},
		{name: "JSON array", body: `[]`},
		{name: "JSON null", body: `null`},
		{name: "missing object", body: `{"entry":[]}`},
		{name: "other object", body: `{"object":"page","entry":[]}`},
		{name: "entry not an array", body: `{"object":"whatsapp_business_account","entry":{}}`},
		{name: "value not an object", body: wrap(`"x"`)},
		{name: "messages not an array", body: wrap(`{"messages":{}}`)},
		{name: "message without id", body: wrap(`{"messages":[{"from":"1","type":"text","text":{"body":"x"}}]}`)},
		{name: "message without from", body: wrap(`{"messages":[{"id":"wamid.A","type":"text"}]}`)},
		{name: "timestamp not a number", body: wrap(`{"messages":[{"from":"1","id":"wamid.A","timestamp":"yesterday"}]}`)},
		{name: "timestamp a float", body: wrap(`{"messages":[{"from":"1","id":"wamid.A","timestamp":1.5}]}`)},
		{name: "timestamp an object", body: wrap(`{"messages":[{"from":"1","id":"wamid.A","timestamp":{}}]}`)},
		{name: "text body of wrong type", body: wrap(`{"messages":[{"from":"1","id":"wamid.A","type":"text","text":{"body":1}}]}`)},
		{name: "latitude not a number", body: wrap(`{"messages":[{"from":"1","id":"wamid.A","type":"location","location":{"latitude":"north"}}]}`)},
		{name: "status without id", body: wrap(`{"statuses":[{"status":"sent"}]}`)},
		{name: "status without status", body: wrap(`{"statuses":[{"id":"wamid.A"}]}`)},
		{name: "status not an object", body: wrap(`{"statuses":[1]}`)},
		{name: "PUT request", body: `{"object":"whatsapp_business_account","entry":[]}`, method: http.MethodPut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := postRequest([]byte(tt.body))
			if tt.method != "" {
				req.Method = tt.method
			}
			got, err := in.Parse(context.Background(), req)
			require.Nil(t, got)
			var br *channels.BadRequestError
			require.ErrorAs(t, err, &br)
			require.NotEmpty(t, br.Reason)
		})
	}
	t.Run("nil request", func(t *testing.T) {
		t.Parallel()
		_, err := in.Parse(context.Background(), nil)
		var br *channels.BadRequestError
		require.ErrorAs(t, err, &br)
	})
}

// TestParseOtherPhoneNumber: one app webhook carries every phone number of
// the app; an account keeps only the changes addressed to its own number
// (a conversation is (phone_number_id, wa_id)) and reports the rest as
// ignored; without a configured number it keeps everything.
func TestParseOtherPhoneNumber(t *testing.T) {
	t.Parallel()
	const ours, theirs = "106540352242922", "999000111222333"
	inbound := func(phone string) channels.Inbound {
		in, err := New(Options{}).NewInbound(channels.Account{
			Settings:      json.RawMessage(`{"phone_number_id":"` + phone + `"}`),
			WebhookSecret: testAppSecret,
		})
		require.NoError(t, err)
		return in
	}
	parse := func(in channels.Inbound, body []byte) *channels.Parsed {
		req := postRequest(body)
		require.NoError(t, in.Verify(context.Background(), req))
		p, err := in.Parse(context.Background(), req)
		require.NoError(t, err)
		return p
	}

	p := parse(inbound(ours), channelstest.ReadFixture(t, "text.json"))
	require.Len(t, p.Messages, 1)
	require.Empty(t, p.Ignored)

	p = parse(inbound(theirs), channelstest.ReadFixture(t, "text.json"))
	require.Empty(t, p.Messages, "another number's message is not this account's")
	require.Len(t, p.Ignored, 1)
	require.Contains(t, p.Ignored[0], ours)
	require.Contains(t, p.Ignored[0], "1 messages")
	p = parse(inbound(theirs), channelstest.ReadFixture(t, "statuses.json"))
	require.Empty(t, p.Statuses)
	require.Len(t, p.Ignored, 1)

	// One POST with changes for two numbers: only ours is kept.
	var n map[string]any
	require.NoError(t, json.Unmarshal(channelstest.ReadFixture(t, "text.json"), &n))
	other := strings.ReplaceAll(string(channelstest.ReadFixture(t, "text.json")), ours, theirs)
	other = strings.ReplaceAll(other, "wamid.HBgL", "wamid.OTHER")
	var o map[string]any
	require.NoError(t, json.Unmarshal([]byte(other), &o))
	n["entry"] = append(n["entry"].([]any), o["entry"].([]any)...)
	mixed, err := json.Marshal(n)
	require.NoError(t, err)
	p = parse(inbound(ours), mixed)
	require.Len(t, p.Messages, 1)
	require.NotContains(t, p.Messages[0].SourceMessageID, "OTHER")
	require.Len(t, p.Ignored, 1)
	require.Contains(t, p.Ignored[0], theirs)

	p = parse(newTestInbound(t), mixed)
	require.Len(t, p.Messages, 2, "no number configured: every change is kept")
	require.Empty(t, p.Ignored)
}
