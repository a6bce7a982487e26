package slack

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
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

const testBotToken = "xoxb-1234-outbound-test"

// webAPICall is one request the fake Web API received.
type webAPICall struct {
	Path string
	Body map[string]any
	Raw  []byte
}

// fakeWebAPI fakes chat.postMessage and chat.update. Like Slack it answers
// ok:false invalid_auth to a wrong bearer token and unknown_method to
// other paths; otherwise respond writes the answer.
type fakeWebAPI struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []webAPICall
}

func newFakeWebAPI(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *fakeWebAPI {
	t.Helper()
	f := &fakeWebAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.calls = append(f.calls, webAPICall{Path: r.URL.Path, Body: body, Raw: raw})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		switch {
		case r.Method != http.MethodPost || (r.URL.Path != "/chat.postMessage" && r.URL.Path != "/chat.update" &&
			r.URL.Path != "/reactions.add" && r.URL.Path != "/reactions.remove"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"ok":false,"error":"unknown_method"}`)
		case r.Header.Get("Authorization") != "Bearer "+testBotToken:
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
		case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || body == nil:
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_json"}`)
		default:
			respond(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWebAPI) recorded() []webAPICall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]webAPICall(nil), f.calls...)
}

func newTestOutbound(t *testing.T, apiBase string, client *http.Client) channels.Outbound {
	t.Helper()
	out, err := New(Options{APIBaseURL: apiBase, HTTPClient: client}).NewOutbound(channels.Account{
		ID:          uuid.New(),
		TenantID:    uuid.New(),
		Credentials: json.RawMessage(`{"bot_token":"` + testBotToken + `"}`),
	})
	require.NoError(t, err)
	return out
}

func textMessage(text string) *channels.OutboundMessage {
	return &channels.OutboundMessage{
		MessageID:      uuid.MustParse("6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01"),
		Attempt:        1,
		IdempotencyKey: "6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01:1:1",
		ConversationID: "C0123ABCD",
		Text:           text,
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		respond   func(http.ResponseWriter, *http.Request)
		msg       func(m *channels.OutboundMessage)
		wantKind  string
		wantRetry time.Duration
		wantID    string
		wantBody  map[string]any
		wantInErr string
	}{
		{
			name:     "success",
			respond:  channelstest.Answer(200, `{"ok":true,"channel":"C0123ABCD","ts":"1700000000.000100","message":{"text":"hello"}}`),
			wantKind: "none",
			wantID:   "1700000000.000100",
			wantBody: map[string]any{"channel": "C0123ABCD", "text": "hello"},
		},
		{
			name:    "thread reply",
			respond: channelstest.Answer(200, `{"ok":true,"channel":"C0123ABCD","ts":"1700000000.000200"}`),
			msg: func(m *channels.OutboundMessage) {
				m.ThreadID = "1690000000.000001"
				m.ReplyToProviderID = "1690000000.000999"
			},
			wantKind: "none",
			wantID:   "1700000000.000200",
			wantBody: map[string]any{"channel": "C0123ABCD", "text": "hello", "thread_ts": "1690000000.000001"},
		},
		{
			name:     "reply without thread starts the quoted message's thread",
			respond:  channelstest.Answer(200, `{"ok":true,"ts":"1700000000.000300"}`),
			msg:      func(m *channels.OutboundMessage) { m.ReplyToProviderID = "1690000000.000999" },
			wantKind: "none",
			wantID:   "1700000000.000300",
			wantBody: map[string]any{"channel": "C0123ABCD", "text": "hello", "thread_ts": "1690000000.000999"},
		},
		{
			name:    "attachments become links",
			respond: channelstest.Answer(200, `{"ok":true,"ts":"1.2"}`),
			msg: func(m *channels.OutboundMessage) {
				m.Attachments = []envelope.SendAttachment{{URL: "https://x.test/a.pdf", Name: "a<b>.pdf"}}
			},
			wantKind: "none",
			wantID:   "1.2",
			wantBody: map[string]any{"channel": "C0123ABCD", "text": "hello\n<https://x.test/a.pdf|a&lt;b&gt;.pdf>"},
		},
		{name: "HTTP 429 with Retry-After seconds", respond: channelstest.Answer(429, ``, "Retry-After", "7"), wantKind: "rate_limited", wantRetry: 7 * time.Second},
		{name: "HTTP 429 without Retry-After", respond: channelstest.Answer(429, ``), wantKind: "rate_limited", wantRetry: time.Second},
		{name: "ok:false rate_limited with Retry-After", respond: channelstest.Answer(200, `{"ok":false,"error":"rate_limited"}`, "Retry-After", "3"), wantKind: "rate_limited", wantRetry: 3 * time.Second, wantInErr: "rate_limited"},
		{name: "ok:false ratelimited", respond: channelstest.Answer(200, `{"ok":false,"error":"ratelimited"}`), wantKind: "rate_limited", wantRetry: time.Second},
		{name: "ok:false internal_error", respond: channelstest.Answer(200, `{"ok":false,"error":"internal_error"}`), wantKind: "transient", wantInErr: "internal_error"},
		{name: "ok:false fatal_error", respond: channelstest.Answer(200, `{"ok":false,"error":"fatal_error"}`), wantKind: "transient"},
		{name: "ok:false service_unavailable", respond: channelstest.Answer(200, `{"ok":false,"error":"service_unavailable"}`), wantKind: "transient"},
		{name: "ok:false request_timeout", respond: channelstest.Answer(200, `{"ok":false,"error":"request_timeout"}`), wantKind: "transient"},
		{name: "ok:false channel_not_found", respond: channelstest.Answer(200, `{"ok":false,"error":"channel_not_found"}`), wantKind: "permanent", wantInErr: "channel_not_found"},
		{name: "ok:false not_in_channel", respond: channelstest.Answer(200, `{"ok":false,"error":"not_in_channel"}`), wantKind: "permanent"},
		{name: "ok:false is_archived", respond: channelstest.Answer(200, `{"ok":false,"error":"is_archived"}`), wantKind: "permanent"},
		{name: "ok:false msg_too_long", respond: channelstest.Answer(200, `{"ok":false,"error":"msg_too_long"}`), wantKind: "permanent"},
		{name: "ok:false no_text", respond: channelstest.Answer(200, `{"ok":false,"error":"no_text"}`), wantKind: "permanent"},
		{name: "ok:false invalid_blocks", respond: channelstest.Answer(200, `{"ok":false,"error":"invalid_blocks"}`), wantKind: "permanent"},
		{name: "ok:false without code", respond: channelstest.Answer(200, `{"ok":false}`), wantKind: "permanent"},
		{name: "HTTP 500 HTML", respond: channelstest.Answer(500, `<html><body>Internal Server Error</body></html>`, "Content-Type", "text/html"), wantKind: "transient"},
		{name: "HTTP 503", respond: channelstest.Answer(503, `<html>down</html>`), wantKind: "transient"},
		{name: "HTTP 200 not JSON", respond: channelstest.Answer(200, `<html>proxy</html>`), wantKind: "transient"},
		{name: "HTTP 400 not JSON", respond: channelstest.Answer(400, `bad`), wantKind: "permanent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeWebAPI(t, tt.respond)
			out := newTestOutbound(t, fake.srv.URL, nil)
			msg := textMessage("hello")
			if tt.msg != nil {
				tt.msg(msg)
			}
			res, err := out.Send(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			require.Equal(t, "/chat.postMessage", calls[0].Path)
			if tt.wantBody != nil {
				require.Equal(t, tt.wantBody, calls[0].Body)
			}
			if err != nil {
				require.Nil(t, res)
				require.NotContains(t, err.Error(), testBotToken)
				if tt.wantInErr != "" {
					require.ErrorContains(t, err, tt.wantInErr)
				}
				if tt.wantKind == "rate_limited" {
					var rl *channels.RateLimitedError
					require.ErrorAs(t, err, &rl)
					require.Equal(t, tt.wantRetry, rl.RetryAfter)
				}
				return
			}
			require.Equal(t, tt.wantID, res.ProviderMessageID)
			require.Empty(t, res.ConversationID)
		})
	}

	t.Run("HTTP 429 with an HTTP-date", func(t *testing.T) {
		t.Parallel()
		fake := newFakeWebAPI(t, channelstest.Answer(429, ``, "Retry-After", future))
		_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), textMessage("hello"))
		var rl *channels.RateLimitedError
		require.ErrorAs(t, err, &rl)
		require.InDelta(t, 90*time.Second, rl.RetryAfter, float64(5*time.Second))
	})
}

func TestSendInvalidMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  *channels.OutboundMessage
	}{
		{name: "nil", msg: nil},
		{name: "no conversation", msg: &channels.OutboundMessage{Text: "hi"}},
		{name: "empty", msg: textMessage("")},
		{name: "button without label", msg: func() *channels.OutboundMessage {
			m := textMessage("hi")
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Value: "x"}}}
			return m
		}()},
		{name: "button value too long", msg: func() *channels.OutboundMessage {
			m := textMessage("hi")
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Label: "x", Value: strings.Repeat("v", maxButtonValue+1)}}}
			return m
		}()},
		{name: "too many blocks", msg: func() *channels.OutboundMessage {
			m := textMessage("hi")
			m.RichContent = &envelope.RichContent{}
			for range maxBlocks {
				m.RichContent.Blocks = append(m.RichContent.Blocks, envelope.RichBlock{Type: envelope.BlockText, Text: "x"})
			}
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeWebAPI(t, channelstest.Answer(200, `{"ok":true,"ts":"1.1"}`))
			_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), tt.msg)
			require.Equal(t, "permanent", channelstest.ErrorKind(err), "error: %v", err)
			require.Empty(t, fake.recorded(), "nothing is sent")
		})
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		respond  func(http.ResponseWriter, *http.Request)
		editID   string
		wantKind string
		wantID   string
	}{
		{name: "success", respond: channelstest.Answer(200, `{"ok":true,"channel":"C0123ABCD","ts":"1700000000.000100","text":"fixed"}`), editID: "1700000000.000100", wantKind: "none", wantID: "1700000000.000100"},
		{name: "cant_update_message", respond: channelstest.Answer(200, `{"ok":false,"error":"cant_update_message"}`), editID: "1.1", wantKind: "permanent"},
		{name: "edit_window_closed", respond: channelstest.Answer(200, `{"ok":false,"error":"edit_window_closed"}`), editID: "1.1", wantKind: "permanent"},
		{name: "message_not_found", respond: channelstest.Answer(200, `{"ok":false,"error":"message_not_found"}`), editID: "1.1", wantKind: "permanent"},
		{name: "rate limited", respond: channelstest.Answer(429, ``, "Retry-After", "2"), editID: "1.1", wantKind: "rate_limited"},
		{name: "server error", respond: channelstest.Answer(502, `<html>bad gateway</html>`), editID: "1.1", wantKind: "transient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeWebAPI(t, tt.respond)
			out := newTestOutbound(t, fake.srv.URL, nil)
			editor, ok := out.(channels.Editor)
			require.True(t, ok, "the Slack sender edits")
			msg := textMessage("fixed")
			msg.EditProviderMessageID = tt.editID
			res, err := editor.Edit(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			require.Equal(t, "/chat.update", calls[0].Path)
			require.Equal(t, map[string]any{"channel": "C0123ABCD", "ts": tt.editID, "text": "fixed", "blocks": []any{}}, calls[0].Body)
			if err == nil {
				require.Equal(t, tt.wantID, res.ProviderMessageID)
			}
		})
	}

	t.Run("no message to edit", func(t *testing.T) {
		t.Parallel()
		fake := newFakeWebAPI(t, channelstest.Answer(200, `{"ok":true}`))
		_, err := newTestOutbound(t, fake.srv.URL, nil).(channels.Editor).Edit(context.Background(), textMessage("x"))
		require.Equal(t, "permanent", channelstest.ErrorKind(err))
		require.Empty(t, fake.recorded())
	})
}

func TestSendTransportFailures(t *testing.T) {
	t.Parallel()

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fake := newFakeWebAPI(t, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // never answer before the client gives up
		})
		out := newTestOutbound(t, fake.srv.URL, &http.Client{Timeout: 50 * time.Millisecond})
		_, err := out.Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err), "error: %v", err)
		require.NotContains(t, err.Error(), testBotToken)
	})

	t.Run("context deadline", func(t *testing.T) {
		t.Parallel()
		fake := newFakeWebAPI(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := newTestOutbound(t, fake.srv.URL, nil).Send(ctx, textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("cancelled by the caller", func(t *testing.T) {
		t.Parallel()
		fake := newFakeWebAPI(t, channelstest.Answer(200, `{"ok":true,"ts":"1.1"}`))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newTestOutbound(t, fake.srv.URL, nil).Send(ctx, textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		_, err := newTestOutbound(t, base, nil).Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.NotContains(t, err.Error(), base, "the URL is not repeated in errors")
	})
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	rich := &envelope.RichContent{
		Title: "Deploy <prod> finished",
		Blocks: []envelope.RichBlock{
			{Type: envelope.BlockText, Text: "All *3* services are up & healthy."},
			{Type: envelope.BlockList, Items: []string{"api", "worker", "web"}},
			{Type: envelope.BlockTable, Rows: [][]string{{"service", "version"}, {"api", "1.4.2"}, {"worker", "1.4.10"}}},
			{Type: envelope.BlockLabel, Text: "took 4m12s"},
			{Type: envelope.BlockImage, URL: "https://img.test/graph.png", Alt: "latency graph"},
		},
		Buttons: []envelope.RichButton{
			{Label: "Open dashboard", URL: "https://dash.test/deploys/42"},
			{Label: "Roll back", Value: "rollback:42"},
			{Label: "Ack"},
			{Label: "Approve", ActionID: "approve", Value: "run-42", Style: envelope.ButtonPrimary},
			{Label: "Reject", ActionID: "reject", Value: "run-42", Style: envelope.ButtonDanger},
		},
		Selects: []envelope.RichSelect{
			{ActionID: "region", Placeholder: "Pick a region", Options: []envelope.RichOption{{Label: "Europe (west)", Value: "eu-west"}, {Label: "US (east)", Value: "us-east"}}},
			{ActionID: "size", Options: []envelope.RichOption{{Label: "Small", Value: "s"}}},
		},
	}
	tests := []struct {
		name   string
		golden string
		msg    func(m *channels.OutboundMessage)
	}{
		{name: "card with text", golden: "card_with_text.json", msg: func(m *channels.OutboundMessage) { m.RichContent = rich }},
		{name: "card only", golden: "card_only.json", msg: func(m *channels.OutboundMessage) { m.Text = ""; m.RichContent = rich }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeWebAPI(t, channelstest.Answer(200, `{"ok":true,"ts":"1.1"}`))
			msg := textMessage("Deployment report for <@U123>")
			tt.msg(msg)
			_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), msg)
			require.NoError(t, err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			channelstest.RequireGoldenJSON(t, filepath.Join("testdata", "outbound", tt.golden), calls[0].Raw, *updateGolden)
		})
	}
}

func TestNewOutboundConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings string
		creds    string
		wantErr  bool
	}{
		{name: "bot token only", creds: `{"bot_token":"xoxb-1"}`},
		{name: "no signing secret needed", settings: `{}`, creds: `{"bot_token":"xoxb-1","other":1}`},
		{name: "no credentials", wantErr: true},
		{name: "empty bot token", creds: `{"bot_token":""}`, wantErr: true},
		{name: "bot token with whitespace", creds: `{"bot_token":"xoxb 1"}`, wantErr: true},
		{name: "credentials not an object", creds: `["xoxb-1"]`, wantErr: true},
		{name: "settings not an object", settings: `"x"`, creds: `{"bot_token":"xoxb-1"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			acct := channels.Account{ID: uuid.New()}
			if tt.settings != "" {
				acct.Settings = json.RawMessage(tt.settings)
			}
			if tt.creds != "" {
				acct.Credentials = json.RawMessage(tt.creds)
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
}
