package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/outbound golden files")

// outboundNow is the clock of the golden-file sender.
var outboundNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// delivery is one request the fake endpoint received, after the
// package's own inbound verifier accepted its signature.
type delivery struct {
	Header http.Header
	Raw    []byte
	Parsed envelope.Message
}

// fakeEndpoint is a Standard Webhooks receiver: it verifies every
// delivery with this package's inbound Verify (signature and timestamp)
// and parses it with Parse, answering 401 or 400 when either fails;
// otherwise respond answers.
type fakeEndpoint struct {
	srv        *httptest.Server
	mu         sync.Mutex
	deliveries []delivery
}

func newFakeEndpoint(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *fakeEndpoint {
	t.Helper()
	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testSecret})
	require.NoError(t, err)
	f := &fakeEndpoint{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req := &channels.Request{Method: r.Method, Header: r.Header, Body: raw, Now: time.Now()}
		if r.URL.Path != "/hooks/mio" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if err := in.Verify(r.Context(), req); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		parsed, err := in.Parse(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.deliveries = append(f.deliveries, delivery{Header: r.Header.Clone(), Raw: raw, Parsed: parsed.Messages[0]})
		f.mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeEndpoint) url() string { return f.srv.URL + "/hooks/mio" }

func (f *fakeEndpoint) recorded() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]delivery(nil), f.deliveries...)
}

func newTestOutbound(t *testing.T, opts Options, endpoint string) channels.Outbound {
	t.Helper()
	settings, err := json.Marshal(map[string]string{"endpoint_url": endpoint})
	require.NoError(t, err)
	out, err := New(opts).NewOutbound(channels.Account{ID: uuid.New(), WebhookSecret: testSecret, Settings: settings})
	require.NoError(t, err)
	return out
}

func textMessage(text string) *channels.OutboundMessage {
	return &channels.OutboundMessage{
		MessageID:      uuid.MustParse("6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01"),
		Attempt:        1,
		IdempotencyKey: "mio-6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01-1",
		SeriesKey:      "msg_6f1c1f4e8d2a4c559c0e2b9a4f1d7e01_1_1",
		ConversationID: "conv_42",
		Text:           text,
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		respond   func(http.ResponseWriter, *http.Request)
		wantKind  string
		wantRetry time.Duration
		wantID    string
		wantGone  bool
	}{
		{name: "200 with id", respond: channelstest.Answer(200, `{"id":"ext_991"}`), wantKind: "none", wantID: "ext_991"},
		{name: "200 with numeric id", respond: channelstest.Answer(200, `{"id":991}`), wantKind: "none", wantID: "991"},
		{name: "204 without body", respond: channelstest.Answer(204, ``), wantKind: "none", wantID: "msg_6f1c1f4e8d2a4c559c0e2b9a4f1d7e01_1_1"},
		{name: "202 text body", respond: channelstest.Answer(202, `accepted`), wantKind: "none", wantID: "msg_6f1c1f4e8d2a4c559c0e2b9a4f1d7e01_1_1"},
		{name: "410 gone", respond: channelstest.Answer(410, ``), wantKind: "permanent", wantGone: true},
		{name: "429 with Retry-After", respond: channelstest.Answer(429, ``, "Retry-After", "11"), wantKind: "rate_limited", wantRetry: 11 * time.Second},
		{name: "429 without Retry-After", respond: channelstest.Answer(429, ``), wantKind: "rate_limited", wantRetry: DefaultRetryAfter},
		{name: "502 with Retry-After", respond: channelstest.Answer(502, ``, "Retry-After", "2"), wantKind: "rate_limited", wantRetry: 2 * time.Second},
		{name: "504", respond: channelstest.Answer(504, ``), wantKind: "rate_limited", wantRetry: DefaultRetryAfter},
		{name: "500", respond: channelstest.Answer(500, `oops`), wantKind: "transient"},
		{name: "503", respond: channelstest.Answer(503, ``), wantKind: "transient"},
		{name: "400", respond: channelstest.Answer(400, `bad`), wantKind: "permanent"},
		{name: "401", respond: channelstest.Answer(401, ``), wantKind: "permanent"},
		{name: "404", respond: channelstest.Answer(404, ``), wantKind: "permanent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeEndpoint(t, tt.respond)
			res, err := newTestOutbound(t, Options{}, fake.url()).Send(context.Background(), textMessage("hello"))
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			got := fake.recorded()
			require.Len(t, got, 1, "the signature verified and the body parsed")
			d := got[0]
			require.Equal(t, "msg_6f1c1f4e8d2a4c559c0e2b9a4f1d7e01_1_1", d.Header.Get(HeaderID))
			require.Equal(t, "application/json", d.Header.Get("Content-Type"))
			require.Equal(t, "msg_6f1c1f4e8d2a4c559c0e2b9a4f1d7e01_1_1", d.Parsed.SourceMessageID)
			require.Equal(t, "conv_42", d.Parsed.Conversation.ID)
			require.Equal(t, "hello", d.Parsed.Text)
			require.Equal(t, envelope.Sender{ID: SenderID, IsBot: true}, d.Parsed.Sender)
			require.False(t, d.Parsed.Edited)
			if err != nil {
				require.Equal(t, tt.wantGone, errors.Is(err, channels.ErrEndpointGone))
				if tt.wantKind == "rate_limited" {
					var rl *channels.RateLimitedError
					require.ErrorAs(t, err, &rl)
					require.Equal(t, tt.wantRetry, rl.RetryAfter)
				}
				return
			}
			// The result names the webhook-id the endpoint received.
			require.Equal(t, &channels.SendResult{ProviderMessageID: tt.wantID, IdempotencyKey: d.Header.Get(HeaderID)}, res)
		})
	}
}

func TestSendWebhookIDStableAcrossRetries(t *testing.T) {
	t.Parallel()
	fake := newFakeEndpoint(t, channelstest.Answer(503, ``))
	out := newTestOutbound(t, Options{}, fake.url())
	msg := textMessage("hello")
	for range 2 {
		_, err := out.Send(context.Background(), msg)
		require.Equal(t, "transient", channelstest.ErrorKind(err))
	}
	got := fake.recorded()
	require.Len(t, got, 2)
	require.Equal(t, got[0].Header.Get(HeaderID), got[1].Header.Get(HeaderID))

	next := textMessage("hello")
	next.Attempt, next.IdempotencyKey = 2, "mio-6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01-2"
	_, _ = out.Send(context.Background(), next)
	got = fake.recorded()
	require.Len(t, got, 3)
	require.Equal(t, got[0].Header.Get(HeaderID), got[2].Header.Get(HeaderID), "the next automatic attempt keeps the webhook-id")

	resent := textMessage("hello")
	resent.Attempt, resent.SeriesKey = 3, ""
	_, _ = out.Send(context.Background(), resent)
	got = fake.recorded()
	require.Len(t, got, 4)
	require.Equal(t, "msg_6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01", got[3].Header.Get(HeaderID), "without a series key the id is derived from the message alone")
}

func TestSendRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			target := newFakeEndpoint(t, channelstest.Answer(200, `{"id":"followed"}`))
			fake := newFakeEndpoint(t, channelstest.Answer(status, ``, "Location", target.url()))
			// A caller's client that would follow redirects is tamed too.
			opts := Options{HTTPClient: &http.Client{Timeout: 5 * time.Second}}
			_, err := newTestOutbound(t, opts, fake.url()).Send(context.Background(), textMessage("hello"))
			require.Equal(t, "permanent", channelstest.ErrorKind(err), "error: %v", err)
			require.ErrorContains(t, err, "redirect")
			require.Len(t, fake.recorded(), 1)
			require.Empty(t, target.recorded(), "the redirect is not followed")
		})
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		respond  func(http.ResponseWriter, *http.Request)
		wantKind string
		wantID   string
	}{
		{name: "endpoint id", respond: channelstest.Answer(200, `{"id":"ext_992"}`), wantKind: "none", wantID: "ext_992"},
		{name: "no id keeps the edited id", respond: channelstest.Answer(204, ``), wantKind: "none", wantID: "ext_991"},
		{name: "gone", respond: channelstest.Answer(410, ``), wantKind: "permanent"},
		{name: "throttled", respond: channelstest.Answer(429, ``, "Retry-After", "1"), wantKind: "rate_limited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeEndpoint(t, tt.respond)
			editor, ok := newTestOutbound(t, Options{}, fake.url()).(channels.Editor)
			require.True(t, ok, "the webhook sender edits")
			msg := textMessage("fixed")
			msg.SeriesKey = "msg_edit_1"
			msg.EditProviderMessageID = "ext_991"
			res, err := editor.Edit(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			got := fake.recorded()
			require.Len(t, got, 1)
			require.True(t, got[0].Parsed.Edited)
			var body map[string]any
			require.NoError(t, json.Unmarshal(got[0].Raw, &body))
			require.Equal(t, EventMessageUpdated, body["type"])
			require.Equal(t, "ext_991", body["data"].(map[string]any)["edit_of_provider_message_id"])
			if err == nil {
				require.Equal(t, tt.wantID, res.ProviderMessageID)
			}
		})
	}

	t.Run("no message to edit", func(t *testing.T) {
		t.Parallel()
		fake := newFakeEndpoint(t, channelstest.Answer(200, ``))
		_, err := newTestOutbound(t, Options{}, fake.url()).(channels.Editor).Edit(context.Background(), textMessage("x"))
		require.Equal(t, "permanent", channelstest.ErrorKind(err))
		require.Empty(t, fake.recorded())
	})
}

func TestSendInvalidMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  *channels.OutboundMessage
	}{
		{name: "nil", msg: nil},
		{name: "no conversation", msg: &channels.OutboundMessage{Text: "hi", IdempotencyKey: "k"}},
		{name: "empty", msg: textMessage(" ")},
		{name: "key with a newline", msg: func() *channels.OutboundMessage {
			m := textMessage("hi")
			m.SeriesKey = "a\nb"
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeEndpoint(t, channelstest.Answer(200, ``))
			_, err := newTestOutbound(t, Options{}, fake.url()).Send(context.Background(), tt.msg)
			require.Equal(t, "permanent", channelstest.ErrorKind(err), "error: %v", err)
			require.Empty(t, fake.recorded())
		})
	}
}

func TestSendTransportFailures(t *testing.T) {
	t.Parallel()

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fake := newFakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		out := newTestOutbound(t, Options{HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}}, fake.url())
		_, err := out.Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err), "error: %v", err)
	})

	t.Run("cancelled by the caller", func(t *testing.T) {
		t.Parallel()
		fake := newFakeEndpoint(t, channelstest.Answer(200, ``))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newTestOutbound(t, Options{}, fake.url()).Send(ctx, textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("connection refused, URL credentials not leaked", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		endpoint := base + "/hook?token=sup3rs3cret"
		_, err := newTestOutbound(t, Options{}, endpoint).Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.NotContains(t, err.Error(), "sup3rs3cret")
	})
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	var raw []byte
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		raw = b
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	out := newTestOutbound(t, Options{Now: func() time.Time { return outboundNow }}, srv.URL)
	msg := textMessage("Deployment report")
	msg.ThreadID = "thr_7"
	msg.ReplyToProviderID = "ext_990"
	msg.Attachments = []envelope.SendAttachment{{URL: "https://files.test/report.pdf", Name: "report.pdf", MimeType: "application/pdf"}}
	msg.RichContent = &envelope.RichContent{
		Title:   "Deploy finished",
		Blocks:  []envelope.RichBlock{{Type: envelope.BlockTable, Rows: [][]string{{"service", "version"}, {"api", "1.4.2"}}}},
		Buttons: []envelope.RichButton{{Label: "Open", URL: "https://dash.test/42"}, {Label: "Ack", Value: "ack"}},
	}
	_, err := out.Send(context.Background(), msg)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	channelstest.RequireGoldenJSON(t, filepath.Join("testdata", "outbound", "message_created.json"), raw, *updateGolden)
}

func TestNewOutboundConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		secret   string
		settings string
		wantErr  bool
	}{
		{name: "https endpoint", secret: testSecret, settings: `{"endpoint_url":"https://agent.example.com/hooks/mio"}`},
		{name: "http endpoint", secret: testSecret, settings: `{"endpoint_url":"http://10.0.0.7:8080/hook"}`},
		{name: "no endpoint", secret: testSecret, settings: `{}`, wantErr: true},
		{name: "no settings", secret: testSecret, wantErr: true},
		{name: "not http(s)", secret: testSecret, settings: `{"endpoint_url":"ftp://agent.example.com/x"}`, wantErr: true},
		{name: "relative", secret: testSecret, settings: `{"endpoint_url":"/hooks/mio"}`, wantErr: true},
		{name: "no secret", settings: `{"endpoint_url":"https://agent.example.com/"}`, wantErr: true},
		{name: "secret without whsec_", secret: "abc", settings: `{"endpoint_url":"https://agent.example.com/"}`, wantErr: true},
		{name: "settings not an object", secret: testSecret, settings: `["https://agent.example.com/"]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			acct := channels.Account{WebhookSecret: tt.secret}
			if tt.settings != "" {
				acct.Settings = json.RawMessage(tt.settings)
			}
			out, err := New(Options{}).NewOutbound(acct)
			if tt.wantErr {
				require.ErrorIs(t, err, channels.ErrInvalidConfig)
				require.Nil(t, out)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, out)
		})
	}

	t.Run("inbound ignores endpoint_url", func(t *testing.T) {
		t.Parallel()
		_, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testSecret, Settings: json.RawMessage(`{"endpoint_url":"https://x.test"}`)})
		require.NoError(t, err)
	})
}
