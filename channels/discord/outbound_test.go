package discord

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
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

const (
	testBotToken  = "MTA5ODc2NTQzMjEw.outbound.test-token"
	testChannelID = "1098765432109876543"
)

// restCall is one request the fake REST API received.
type restCall struct {
	Method string
	Path   string
	Body   map[string]any
	Raw    []byte
}

var messagesPath = regexp.MustCompile(`^/channels/[0-9]+/messages(/[0-9]+)?$`)

// fakeREST fakes Create and Edit Message. Like Discord it answers 401 to
// a wrong "Bot" token and 404 to other routes; otherwise respond answers.
type fakeREST struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []restCall
}

func newFakeREST(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *fakeREST {
	t.Helper()
	f := &fakeREST{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.calls = append(f.calls, restCall{Method: r.Method, Path: r.URL.Path, Body: body, Raw: raw})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bot "+testBotToken:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"401: Unauthorized","code":0}`)
		case !messagesPath.MatchString(r.URL.Path) || (r.Method != http.MethodPost && r.Method != http.MethodPatch):
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"404: Not Found","code":0}`)
		case r.Header.Get("Content-Type") != "application/json" || body == nil:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"message":"Cannot send an empty message","code":50006}`)
		default:
			respond(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeREST) recorded() []restCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]restCall(nil), f.calls...)
}

func created(id string) func(http.ResponseWriter, *http.Request) {
	return channelstest.Answer(200, fmt.Sprintf(`{"id":%q,"channel_id":%q,"content":"hello","author":{"id":"1","bot":true}}`, id, testChannelID),
		"X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "1.5")
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
		ConversationID: testChannelID,
		Text:           text,
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		respond   func(http.ResponseWriter, *http.Request)
		msg       func(m *channels.OutboundMessage)
		wantKind  string
		wantRetry time.Duration
		wantID    string
		wantBody  string
		wantInErr string
	}{
		{
			name:     "success",
			respond:  created("1200000000000000001"),
			wantKind: "none", wantID: "1200000000000000001",
			wantBody: `{"content":"hello","nonce":"` + nonce("6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01:1:1") + `","enforce_nonce":true,"allowed_mentions":{"parse":["users"],"replied_user":true}}`,
		},
		{
			name:     "reply",
			respond:  created("1200000000000000002"),
			msg:      func(m *channels.OutboundMessage) { m.ReplyToProviderID = "1190000000000000000"; m.IdempotencyKey = "" },
			wantKind: "none", wantID: "1200000000000000002",
			wantBody: `{"content":"hello","message_reference":{"message_id":"1190000000000000000","fail_if_not_exists":false},"allowed_mentions":{"parse":["users"],"replied_user":true}}`,
		},
		{name: "429 body retry_after float", respond: channelstest.Answer(429, `{"message":"You are being rate limited.","retry_after":0.657,"global":false}`, "Retry-After", "1"), wantKind: "rate_limited", wantRetry: 657 * time.Millisecond},
		{name: "429 global", respond: channelstest.Answer(429, `{"message":"You are being rate limited.","retry_after":12.5,"global":true}`), wantKind: "rate_limited", wantRetry: 12500 * time.Millisecond},
		{name: "429 Retry-After header only", respond: channelstest.Answer(429, `<html>cloudflare</html>`, "Retry-After", "4"), wantKind: "rate_limited", wantRetry: 4 * time.Second},
		{name: "429 without a wait", respond: channelstest.Answer(429, `{}`), wantKind: "rate_limited", wantRetry: time.Second},
		{name: "502", respond: channelstest.Answer(502, `<html>502 Bad Gateway</html>`), wantKind: "transient"},
		{name: "500", respond: channelstest.Answer(500, `{"message":"Internal Server Error","code":0}`), wantKind: "transient"},
		{name: "403 missing permissions", respond: channelstest.Answer(403, `{"message":"Missing Permissions","code":50013}`), wantKind: "permanent", wantInErr: "50013"},
		{name: "404 unknown channel", respond: channelstest.Answer(404, `{"message":"Unknown Channel","code":10003}`), wantKind: "permanent", wantInErr: "Unknown Channel"},
		{name: "400 invalid form body", respond: channelstest.Answer(400, `{"message":"Invalid Form Body","code":50035,"errors":{"content":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH"}]}}}`), wantKind: "permanent"},
		{name: "200 not JSON", respond: channelstest.Answer(200, `ok`), wantKind: "transient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeREST(t, tt.respond)
			msg := textMessage("hello")
			if tt.msg != nil {
				tt.msg(msg)
			}
			res, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			require.Equal(t, http.MethodPost, calls[0].Method)
			require.Equal(t, "/channels/"+testChannelID+"/messages", calls[0].Path)
			if tt.wantBody != "" {
				require.JSONEq(t, tt.wantBody, string(calls[0].Raw))
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
			var sent struct {
				Nonce string `json:"nonce"`
			}
			require.NoError(t, json.Unmarshal(calls[0].Raw, &sent))
			// The result names the nonce Discord received (none without a key).
			require.Equal(t, &channels.SendResult{ProviderMessageID: tt.wantID, IdempotencyKey: sent.Nonce}, res)
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
	manyButtons := make([]envelope.RichButton, maxButtons+1)
	for i := range manyButtons {
		manyButtons[i] = envelope.RichButton{Label: fmt.Sprint(i)}
	}
	tests := []struct {
		name string
		msg  *channels.OutboundMessage
	}{
		{name: "nil", msg: nil},
		{name: "conversation not a snowflake", msg: with(func(m *channels.OutboundMessage) { m.ConversationID = "../users/@me" })},
		{name: "reply id not a snowflake", msg: with(func(m *channels.OutboundMessage) { m.ReplyToProviderID = "x" })},
		{name: "empty", msg: textMessage(" ")},
		{name: "content over 2000 characters", msg: textMessage(strings.Repeat("ü", maxContentLength+1))},
		{name: "too many buttons", msg: with(func(m *channels.OutboundMessage) { m.RichContent = &envelope.RichContent{Buttons: manyButtons} })},
		{name: "duplicate button values", msg: with(func(m *channels.OutboundMessage) {
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Label: "A", Value: "x"}, {Label: "B", Value: "x"}}}
		})},
		{name: "a select's action id is a button's custom id", msg: with(func(m *channels.OutboundMessage) {
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Label: "A", ActionID: "region"}},
				Selects: []envelope.RichSelect{{ActionID: "region", Options: []envelope.RichOption{{Label: "EU", Value: "eu"}}}}}
		})},
		{name: "buttons and selects over five action rows", msg: with(func(m *channels.OutboundMessage) {
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Label: "A", ActionID: "a"}}}
			for i := range 5 {
				m.RichContent.Selects = append(m.RichContent.Selects, envelope.RichSelect{ActionID: fmt.Sprint("s", i),
					Options: []envelope.RichOption{{Label: "EU", Value: "eu"}}})
			}
		})},
		{name: "custom id too long", msg: with(func(m *channels.OutboundMessage) {
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Label: "A", Value: strings.Repeat("x", maxCustomID+1)}}}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeREST(t, created("1"))
			_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), tt.msg)
			require.Equal(t, "permanent", channelstest.ErrorKind(err), "error: %v", err)
			require.Empty(t, fake.recorded(), "nothing is sent")
		})
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	const editID = "1200000000000000001"
	tests := []struct {
		name     string
		respond  func(http.ResponseWriter, *http.Request)
		wantKind string
	}{
		{name: "success", respond: created(editID), wantKind: "none"},
		{name: "unknown message", respond: channelstest.Answer(404, `{"message":"Unknown Message","code":10008}`), wantKind: "permanent"},
		{name: "rate limited", respond: channelstest.Answer(429, `{"message":"You are being rate limited.","retry_after":2.0,"global":false}`), wantKind: "rate_limited"},
		{name: "bad gateway", respond: channelstest.Answer(502, ``), wantKind: "transient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeREST(t, tt.respond)
			editor, ok := newTestOutbound(t, fake.srv.URL, nil).(channels.Editor)
			require.True(t, ok, "the Discord sender edits")
			msg := textMessage("fixed")
			msg.EditProviderMessageID = editID
			res, err := editor.Edit(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			require.Equal(t, http.MethodPatch, calls[0].Method)
			require.Equal(t, "/channels/"+testChannelID+"/messages/"+editID, calls[0].Path)
			require.JSONEq(t, `{"content":"fixed","embeds":[],"components":[],"allowed_mentions":{"parse":["users"],"replied_user":true}}`, string(calls[0].Raw))
			if err == nil {
				require.Equal(t, editID, res.ProviderMessageID)
			}
		})
	}

	t.Run("edit id not a snowflake", func(t *testing.T) {
		t.Parallel()
		fake := newFakeREST(t, created("1"))
		msg := textMessage("fixed")
		msg.EditProviderMessageID = "abc"
		_, err := newTestOutbound(t, fake.srv.URL, nil).(channels.Editor).Edit(context.Background(), msg)
		require.Equal(t, "permanent", channelstest.ErrorKind(err))
		require.Empty(t, fake.recorded())
	})
}

func TestSendTransportFailures(t *testing.T) {
	t.Parallel()

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fake := newFakeREST(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		out := newTestOutbound(t, fake.srv.URL, &http.Client{Timeout: 50 * time.Millisecond})
		_, err := out.Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err), "error: %v", err)
	})

	t.Run("cancelled by the caller", func(t *testing.T) {
		t.Parallel()
		fake := newFakeREST(t, created("1"))
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
	fake := newFakeREST(t, created("1"))
	msg := textMessage("Deployment report")
	msg.ReplyToProviderID = "1190000000000000000"
	msg.Attachments = []envelope.SendAttachment{{URL: "https://files.test/report.pdf", Name: "report.pdf"}}
	msg.RichContent = &envelope.RichContent{
		Title: "Deploy finished",
		Blocks: []envelope.RichBlock{
			{Type: envelope.BlockText, Text: "All 3 services are up."},
			{Type: envelope.BlockList, Items: []string{"api", "worker"}},
			{Type: envelope.BlockTable, Rows: [][]string{{"service", "version"}, {"api", "1.4.2"}, {"worker", "1.4.10"}}},
			{Type: envelope.BlockLabel, Text: "took 4m12s"},
			{Type: envelope.BlockImage, URL: "https://img.test/graph.png", Alt: "latency graph"},
			{Type: envelope.BlockImage, URL: "https://img.test/errors.png"},
		},
		Buttons: []envelope.RichButton{
			{Label: "Open dashboard", URL: "https://dash.test/deploys/42"},
			{Label: "Roll back", Value: "rollback:42"},
			{Label: "Ack"},
			{Label: "Snooze 1h", Value: "snooze:1h"},
			{Label: "Snooze 1d", Value: "snooze:1d"},
			{Label: "Mute", Value: "mute"},
			{Label: "Approve", ActionID: "approve", Value: "run-42", Style: envelope.ButtonPrimary},
			{Label: "Reject", ActionID: "reject", Value: "run-42", Style: envelope.ButtonDanger},
		},
		Selects: []envelope.RichSelect{{ActionID: "region", Placeholder: "Pick a region",
			Options: []envelope.RichOption{{Label: "Europe (west)", Value: "eu-west"}, {Label: "US (east)", Value: "us-east"}}}},
	}
	_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), msg)
	require.NoError(t, err)
	calls := fake.recorded()
	require.Len(t, calls, 1)
	channelstest.RequireGoldenJSON(t, filepath.Join("testdata", "outbound", "rich_create_message.json"), calls[0].Raw, *updateGolden)
}

func TestNewOutboundConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings string
		creds    string
		wantErr  bool
	}{
		{name: "bot token, no public key needed", creds: `{"bot_token":"abc.def"}`},
		{name: "no credentials", wantErr: true},
		{name: "empty bot token", creds: `{"bot_token":""}`, wantErr: true},
		{name: "bot token with a newline", creds: `{"bot_token":"abc\ndef"}`, wantErr: true},
		{name: "credentials not an object", creds: `[]`, wantErr: true},
		{name: "settings not an object", settings: `1`, creds: `{"bot_token":"abc"}`, wantErr: true},
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

func TestNonce(t *testing.T) {
	t.Parallel()
	a := nonce("msg:1:1")
	require.Len(t, a, nonceLength)
	require.Equal(t, a, nonce("msg:1:1"), "stable across retries of one attempt")
	require.NotEqual(t, a, nonce("msg:1:2"))
}
