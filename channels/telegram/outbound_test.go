package telegram

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

const testBotToken = "7654321:AAH-outbound_test-token"

// botAPICall is one request the fake Bot API received.
type botAPICall struct {
	Method string // Bot API method, from the path
	Raw    []byte
}

// fakeBotAPI fakes sendMessage and editMessageText. Like Telegram it
// answers 401 to a path without the right /bot<token>/ and 404 to other
// methods; otherwise the next queued answer is written (the last one
// repeats).
type fakeBotAPI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	calls   []botAPICall
	answers []func(http.ResponseWriter, *http.Request)
}

func newFakeBotAPI(t *testing.T, answers ...func(http.ResponseWriter, *http.Request)) *fakeBotAPI {
	t.Helper()
	f := &fakeBotAPI{answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rest, hasToken := strings.CutPrefix(r.URL.Path, "/bot"+testBotToken+"/")
		f.mu.Lock()
		f.calls = append(f.calls, botAPICall{Method: rest, Raw: raw})
		answer := f.answers[min(len(f.calls), len(f.answers))-1]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case !hasToken || r.Method != http.MethodPost:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		case rest != "sendMessage" && rest != "editMessageText" && rest != "answerCallbackQuery" && rest != "setMessageReaction":
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"ok":false,"error_code":404,"description":"Not Found: method not found"}`)
		case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || !json.Valid(raw):
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"ok":false,"error_code":400,"description":"Bad Request: message text is empty"}`)
		default:
			answer(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBotAPI) recorded() []botAPICall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]botAPICall(nil), f.calls...)
}

func sent(id int64) func(http.ResponseWriter, *http.Request) {
	return channelstest.Answer(200, `{"ok":true,"result":{"message_id":`+jsonInt(id)+`,"date":1717180000,"chat":{"id":-1001234567890,"type":"supergroup"},"text":"hello"}}`)
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func newTestOutbound(t *testing.T, apiBase string, client *http.Client) channels.Outbound {
	t.Helper()
	out, err := New(Options{APIBaseURL: apiBase, HTTPClient: client}).NewOutbound(channels.Account{
		ID:          uuid.New(),
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
		ConversationID: "-1001234567890",
		Text:           text,
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		answers   []func(http.ResponseWriter, *http.Request)
		msg       func(m *channels.OutboundMessage)
		wantKind  string
		wantRetry time.Duration
		wantID    string
		wantConv  string
		wantCalls int
		wantBody  string // JSON of the first call
		wantInErr string
	}{
		{
			name:     "success",
			answers:  []func(http.ResponseWriter, *http.Request){sent(42)},
			wantKind: "none", wantID: "42", wantCalls: 1,
			wantBody: `{"chat_id":-1001234567890,"text":"hello"}`,
		},
		{
			name:     "topic reply",
			answers:  []func(http.ResponseWriter, *http.Request){sent(43)},
			msg:      func(m *channels.OutboundMessage) { m.ThreadID = "77"; m.ReplyToProviderID = "40" },
			wantKind: "none", wantID: "43", wantCalls: 1,
			wantBody: `{"chat_id":-1001234567890,"text":"hello","message_thread_id":77,"reply_parameters":{"message_id":40,"allow_sending_without_reply":true}}`,
		},
		{
			name:     "channel username",
			answers:  []func(http.ResponseWriter, *http.Request){sent(44)},
			msg:      func(m *channels.OutboundMessage) { m.ConversationID = "@mio_news" },
			wantKind: "none", wantID: "44", wantCalls: 1,
			wantBody: `{"chat_id":"@mio_news","text":"hello"}`,
		},
		{
			name: "migrate_to_chat_id resends once to the supergroup",
			answers: []func(http.ResponseWriter, *http.Request){
				channelstest.Answer(400, `{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1009876543210}}`),
				sent(7),
			},
			msg:      func(m *channels.OutboundMessage) { m.ConversationID = "-4567" },
			wantKind: "none", wantID: "7", wantConv: "-1009876543210", wantCalls: 2,
			wantBody: `{"chat_id":-4567,"text":"hello"}`,
		},
		{
			name: "migrate_to_chat_id twice is permanent",
			answers: []func(http.ResponseWriter, *http.Request){
				channelstest.Answer(400, `{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1009876543210}}`),
			},
			wantKind: "permanent", wantCalls: 2, wantInErr: "upgraded",
		},
		{
			name:     "429 with parameters.retry_after",
			answers:  []func(http.ResponseWriter, *http.Request){channelstest.Answer(429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 17","parameters":{"retry_after":17}}`, "Retry-After", "17")},
			wantKind: "rate_limited", wantRetry: 17 * time.Second, wantCalls: 1,
		},
		{
			name:     "429 with Retry-After only",
			answers:  []func(http.ResponseWriter, *http.Request){channelstest.Answer(429, `{"ok":false,"error_code":429,"description":"Too Many Requests"}`, "Retry-After", "5")},
			wantKind: "rate_limited", wantRetry: 5 * time.Second, wantCalls: 1,
		},
		{
			name:     "429 without a wait",
			answers:  []func(http.ResponseWriter, *http.Request){channelstest.Answer(429, `{"ok":false,"error_code":429,"description":"Too Many Requests"}`)},
			wantKind: "rate_limited", wantRetry: time.Second, wantCalls: 1,
		},
		{
			name:     "500",
			answers:  []func(http.ResponseWriter, *http.Request){channelstest.Answer(500, `{"ok":false,"error_code":500,"description":"Internal Server Error"}`)},
			wantKind: "transient", wantCalls: 1,
		},
		{
			name:     "502 HTML",
			answers:  []func(http.ResponseWriter, *http.Request){channelstest.Answer(502, `<html>Bad Gateway</html>`)},
			wantKind: "transient", wantCalls: 1,
		},
		{
			name:     "400 chat not found",
			answers:  []func(http.ResponseWriter, *http.Request){channelstest.Answer(400, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`)},
			wantKind: "permanent", wantCalls: 1, wantInErr: "chat not found",
		},
		{
			name:     "403 bot blocked",
			answers:  []func(http.ResponseWriter, *http.Request){channelstest.Answer(403, `{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}`)},
			wantKind: "permanent", wantCalls: 1, wantInErr: "blocked",
		},
		{
			name:     "200 not JSON",
			answers:  []func(http.ResponseWriter, *http.Request){channelstest.Answer(200, `<html>portal</html>`)},
			wantKind: "transient", wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeBotAPI(t, tt.answers...)
			msg := textMessage("hello")
			if tt.msg != nil {
				tt.msg(msg)
			}
			res, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			calls := fake.recorded()
			require.Len(t, calls, tt.wantCalls)
			for _, c := range calls {
				require.Equal(t, "sendMessage", c.Method)
			}
			if tt.wantBody != "" {
				require.JSONEq(t, tt.wantBody, string(calls[0].Raw))
			}
			if tt.wantConv != "" {
				var second map[string]any
				require.NoError(t, json.Unmarshal(calls[1].Raw, &second))
				require.InDelta(t, -1009876543210, second["chat_id"], 0.5, "resent to the new chat")
			}
			if err != nil {
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
			require.Equal(t, &channels.SendResult{ProviderMessageID: tt.wantID, ConversationID: tt.wantConv}, res)
		})
	}
}

func TestSendInvalidMessages(t *testing.T) {
	t.Parallel()
	with := func(f func(m *channels.OutboundMessage)) *channels.OutboundMessage {
		m := textMessage("hello")
		f(m)
		return m
	}
	tests := []struct {
		name string
		msg  *channels.OutboundMessage
	}{
		{name: "nil", msg: nil},
		{name: "no conversation", msg: with(func(m *channels.OutboundMessage) { m.ConversationID = "" })},
		{name: "conversation not a chat id", msg: with(func(m *channels.OutboundMessage) { m.ConversationID = "general" })},
		{name: "empty text", msg: textMessage("  ")},
		{name: "text over 4096 characters", msg: textMessage(strings.Repeat("é", maxTextLength+1))},
		{name: "thread id not numeric", msg: with(func(m *channels.OutboundMessage) { m.ThreadID = "abc" })},
		{name: "reply id not numeric", msg: with(func(m *channels.OutboundMessage) { m.ReplyToProviderID = "abc" })},
		{name: "callback data over 64 bytes", msg: with(func(m *channels.OutboundMessage) {
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Label: "Go", Value: strings.Repeat("x", maxCallbackData+1)}}}
		})},
		{name: "button without label", msg: with(func(m *channels.OutboundMessage) {
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Value: "x"}}}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeBotAPI(t, sent(1))
			_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), tt.msg)
			require.Equal(t, "permanent", channelstest.ErrorKind(err), "error: %v", err)
			require.Empty(t, fake.recorded(), "nothing is sent")
		})
	}

	t.Run("exactly 4096 characters is sent", func(t *testing.T) {
		t.Parallel()
		fake := newFakeBotAPI(t, sent(1))
		_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), textMessage(strings.Repeat("é", maxTextLength)))
		require.NoError(t, err)
	})
}

func TestEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		answer   func(http.ResponseWriter, *http.Request)
		editID   string
		wantKind string
		wantID   string
		wantCall bool
	}{
		{name: "success", answer: sent(42), editID: "42", wantKind: "none", wantID: "42", wantCall: true},
		{name: "inline message answers true", answer: channelstest.Answer(200, `{"ok":true,"result":true}`), editID: "42", wantKind: "none", wantID: "42", wantCall: true},
		{name: "not modified counts as done", answer: channelstest.Answer(400, `{"ok":false,"error_code":400,"description":"Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"}`), editID: "42", wantKind: "none", wantID: "42", wantCall: true},
		{name: "message to edit not found", answer: channelstest.Answer(400, `{"ok":false,"error_code":400,"description":"Bad Request: message to edit not found"}`), editID: "42", wantKind: "permanent", wantCall: true},
		{name: "rate limited", answer: channelstest.Answer(429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`), editID: "42", wantKind: "rate_limited", wantCall: true},
		{name: "server error", answer: channelstest.Answer(503, ``), editID: "42", wantKind: "transient", wantCall: true},
		{name: "edit id not numeric", answer: sent(1), editID: "abc", wantKind: "permanent"},
		{name: "no edit id", answer: sent(1), editID: "", wantKind: "permanent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeBotAPI(t, tt.answer)
			editor, ok := newTestOutbound(t, fake.srv.URL, nil).(channels.Editor)
			require.True(t, ok, "the Telegram sender edits")
			msg := textMessage("fixed")
			msg.EditProviderMessageID = tt.editID
			res, err := editor.Edit(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			calls := fake.recorded()
			if !tt.wantCall {
				require.Empty(t, calls)
				return
			}
			require.Len(t, calls, 1)
			require.Equal(t, "editMessageText", calls[0].Method)
			require.JSONEq(t, `{"chat_id":-1001234567890,"message_id":42,"text":"fixed"}`, string(calls[0].Raw))
			if err == nil {
				require.Equal(t, tt.wantID, res.ProviderMessageID)
			}
		})
	}
}

func TestSendTransportFailures(t *testing.T) {
	t.Parallel()

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fake := newFakeBotAPI(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		out := newTestOutbound(t, fake.srv.URL, &http.Client{Timeout: 50 * time.Millisecond})
		_, err := out.Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err), "error: %v", err)
		require.NotContains(t, err.Error(), testBotToken, "the token in the URL never reaches an error")
	})

	t.Run("cancelled by the caller", func(t *testing.T) {
		t.Parallel()
		fake := newFakeBotAPI(t, sent(1))
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
		require.NotContains(t, err.Error(), testBotToken)
	})
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	fake := newFakeBotAPI(t, sent(9))
	msg := textMessage("Deployment report")
	msg.Attachments = []envelope.SendAttachment{{URL: "https://files.test/report.pdf", Name: "report.pdf"}}
	msg.RichContent = &envelope.RichContent{
		Title: "Deploy finished",
		Blocks: []envelope.RichBlock{
			{Type: envelope.BlockText, Text: "All 3 services are up."},
			{Type: envelope.BlockList, Items: []string{"api", "worker"}},
			{Type: envelope.BlockTable, Rows: [][]string{{"service", "version"}, {"api", "1.4.2"}}},
			{Type: envelope.BlockLabel, Text: "took 4m12s"},
			{Type: envelope.BlockImage, URL: "https://img.test/graph.png", Alt: "latency graph"},
		},
		Buttons: []envelope.RichButton{
			{Label: "Open dashboard", URL: "https://dash.test/deploys/42"},
			{Label: "Roll back", Value: "rollback:42"},
			{Label: "Ack"},
			{Label: "Approve", ActionID: "approve", Value: "run-42", Style: envelope.ButtonPrimary},
		},
		Selects: []envelope.RichSelect{{ActionID: "region", Placeholder: "Pick a region",
			Options: []envelope.RichOption{{Label: "Europe (west)", Value: "eu-west"}, {Label: "US (east)", Value: "us-east"}}}},
	}
	_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), msg)
	require.NoError(t, err)
	calls := fake.recorded()
	require.Len(t, calls, 1)
	channelstest.RequireGoldenJSON(t, filepath.Join("testdata", "outbound", "rich_send_message.json"), calls[0].Raw, *updateGolden)
}

func TestNewOutboundConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings string
		creds    string
		wantErr  bool
	}{
		{name: "bot token, no webhook secret needed", creds: `{"bot_token":"123:abc_DEF-1"}`},
		{name: "no credentials", wantErr: true},
		{name: "empty bot token", creds: `{"bot_token":""}`, wantErr: true},
		{name: "malformed bot token", creds: `{"bot_token":"123/abc"}`, wantErr: true},
		{name: "credentials not an object", creds: `"123:abc"`, wantErr: true},
		{name: "settings not an object", settings: `[1]`, creds: `{"bot_token":"123:abc"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			acct := channels.Account{}
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
