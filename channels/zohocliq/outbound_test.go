package zohocliq

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
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
	testAccessToken = "1000.outbound0test0access0token.abcdef"
	testChatID      = "CT_2230642387564397866_64396901"
)

// cliqCall is one request the fake Cliq API received.
type cliqCall struct {
	Path string
	Raw  []byte
}

var chatMessagesPath = regexp.MustCompile(`^/api/v3/chats/[^/]+/messages$`)

// fakeCliq fakes POST /api/v3/chats/{id}/messages. Like Cliq it answers
// 401 to a wrong Zoho-oauthtoken and 404 to other routes; otherwise
// respond answers.
type fakeCliq struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []cliqCall
}

func newFakeCliq(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *fakeCliq {
	t.Helper()
	f := &fakeCliq{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, cliqCall{Path: r.URL.EscapedPath(), Raw: raw})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Zoho-oauthtoken "+testAccessToken:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"code":"oauthtoken_invalid","message":"Invalid OAuth token."}`)
		case r.Method != http.MethodPost || !chatMessagesPath.MatchString(r.URL.EscapedPath()):
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"code":"url_not_found","message":"Not found"}`)
		case r.Header.Get("Content-Type") != "application/json" || !json.Valid(raw):
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"code":"input_invalid","message":"Invalid input"}`)
		default:
			respond(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeCliq) recorded() []cliqCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cliqCall(nil), f.calls...)
}

func newTestOutbound(t *testing.T, apiBase string, client *http.Client, settings string) channels.Outbound {
	t.Helper()
	acct := channels.Account{ID: uuid.New(), Credentials: json.RawMessage(`{"access_token":"` + testAccessToken + `"}`)}
	if settings != "" {
		acct.Settings = json.RawMessage(settings)
	}
	out, err := New(Options{APIBaseURL: apiBase, HTTPClient: client, APIBasePolicy: channels.APIBasePolicy{AllowHTTP: true}}).NewOutbound(acct)
	require.NoError(t, err)
	return out
}

func textMessage(text string) *channels.OutboundMessage {
	return &channels.OutboundMessage{
		MessageID:      uuid.MustParse("6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01"),
		Attempt:        1,
		IdempotencyKey: "6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01:1:1",
		ConversationID: testChatID,
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
			respond:  channelstest.Answer(200, `{"message_id":"1718000000000_123456789"}`),
			wantKind: "none", wantID: "1718000000000_123456789",
			wantBody: `{"text":"hello","sync_message":true}`,
		},
		{
			name:     "reply, numeric message id",
			respond:  channelstest.Answer(200, `{"message_id":1718000000000123}`),
			msg:      func(m *channels.OutboundMessage) { m.ReplyToProviderID = "1717999999999_42" },
			wantKind: "none", wantID: "1718000000000123",
			wantBody: `{"text":"hello","reply_to":"1717999999999_42","sync_message":true}`,
		},
		{name: "no message id", respond: channelstest.Answer(204, ``), wantKind: "none", wantID: ""},
		{name: "429 with Retry-After", respond: channelstest.Answer(429, `{"message":"Too many requests"}`, "Retry-After", "30"), wantKind: "rate_limited", wantRetry: 30 * time.Second},
		{name: "429 locks for 10 minutes", respond: channelstest.Answer(429, `{"code":"too_many_requests","message":"Too many requests"}`), wantKind: "rate_limited", wantRetry: 10 * time.Minute, wantInErr: "too_many_requests"},
		{name: "500", respond: channelstest.Answer(500, `{"message":"Internal error"}`), wantKind: "transient"},
		{name: "503 not JSON", respond: channelstest.Answer(503, `<html>down</html>`), wantKind: "transient"},
		{name: "400", respond: channelstest.Answer(400, `{"code":"input_invalid","message":"Invalid input"}`), wantKind: "permanent", wantInErr: "Invalid input"},
		{name: "403", respond: channelstest.Answer(403, `{"message":"Access denied"}`), wantKind: "permanent"},
		{name: "404 unknown chat", respond: channelstest.Answer(404, `{"message":"Chat not found"}`), wantKind: "permanent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeCliq(t, tt.respond)
			msg := textMessage("hello")
			if tt.msg != nil {
				tt.msg(msg)
			}
			res, err := newTestOutbound(t, fake.srv.URL, nil, "").Send(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			require.Equal(t, "/api/v3/chats/"+testChatID+"/messages", calls[0].Path)
			if tt.wantBody != "" {
				require.JSONEq(t, tt.wantBody, string(calls[0].Raw))
			}
			if err != nil {
				require.NotContains(t, err.Error(), testAccessToken)
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
			require.Equal(t, &channels.SendResult{ProviderMessageID: tt.wantID}, res)
		})
	}
}

func TestSendAccountDataCentre(t *testing.T) {
	t.Parallel()
	eu := newFakeCliq(t, channelstest.Answer(200, `{"message_id":"eu_1"}`))
	us := newFakeCliq(t, channelstest.Answer(200, `{"message_id":"us_1"}`))
	out := newTestOutbound(t, us.srv.URL, nil, `{"api_base_url":"`+eu.srv.URL+`/"}`)
	msg := textMessage("hello")
	msg.ConversationID = "chat/with spaces"
	res, err := out.Send(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, "eu_1", res.ProviderMessageID)
	require.Empty(t, us.recorded())
	calls := eu.recorded()
	require.Len(t, calls, 1)
	require.Equal(t, "/api/v3/chats/chat%2Fwith%20spaces/messages", calls[0].Path, "the chat id is path-escaped")
}

func TestNoEditor(t *testing.T) {
	t.Parallel()
	out := newTestOutbound(t, "http://cliq.test", nil, "")
	_, ok := out.(channels.Editor)
	require.False(t, ok, "Cliq's edit REST path is unverified: edits are sent as new messages")
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
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{URL: "https://x.test"}}}
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeCliq(t, channelstest.Answer(200, `{}`))
			_, err := newTestOutbound(t, fake.srv.URL, nil, "").Send(context.Background(), tt.msg)
			require.Equal(t, "permanent", channelstest.ErrorKind(err), "error: %v", err)
			require.Empty(t, fake.recorded())
		})
	}
}

func TestSendTransportFailures(t *testing.T) {
	t.Parallel()

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fake := newFakeCliq(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		out := newTestOutbound(t, fake.srv.URL, &http.Client{Timeout: 50 * time.Millisecond}, "")
		_, err := out.Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err), "error: %v", err)
	})

	t.Run("cancelled by the caller", func(t *testing.T) {
		t.Parallel()
		fake := newFakeCliq(t, channelstest.Answer(200, `{}`))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newTestOutbound(t, fake.srv.URL, nil, "").Send(ctx, textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		_, err := newTestOutbound(t, base, nil, "").Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.NotContains(t, err.Error(), testAccessToken)
	})
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	rich := &envelope.RichContent{
		Title: "Deploy finished",
		Blocks: []envelope.RichBlock{
			{Type: envelope.BlockText, Text: "All 3 services are up."},
			{Type: envelope.BlockList, Items: []string{"api", "worker"}},
			{Type: envelope.BlockTable, Rows: [][]string{{"service", "version", ""}, {"api", "1.4.2", "ok"}, {"worker"}}},
			{Type: envelope.BlockLabel, Text: "took 4m12s"},
			{Type: envelope.BlockImage, URL: "https://img.test/graph.png", Alt: "latency graph"},
		},
		Buttons: []envelope.RichButton{
			{Label: "Open dashboard", URL: "https://dash.test/deploys/42"},
			{Label: "Roll back", Value: "rollback:42"},
			{Label: "Ack"},
		},
		Selects: []envelope.RichSelect{{ActionID: "region", Placeholder: "Pick a region",
			Options: []envelope.RichOption{{Label: "Europe (west)", Value: "eu-west"}, {Label: "US (east)", Value: "us-east"}}}},
	}
	tests := []struct {
		name   string
		golden string
		text   string
	}{
		{name: "card with text", golden: "card_with_text.json", text: "Deployment report"},
		{name: "card only", golden: "card_only.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeCliq(t, channelstest.Answer(200, `{"message_id":"1"}`))
			msg := textMessage(tt.text)
			msg.Attachments = []envelope.SendAttachment{{URL: "https://files.test/report.pdf", Name: "report.pdf"}}
			msg.RichContent = rich
			if tt.text == "" {
				msg.Attachments = nil
			}
			_, err := newTestOutbound(t, fake.srv.URL, nil, "").Send(context.Background(), msg)
			require.NoError(t, err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			channelstest.RequireGoldenJSON(t, filepath.Join("testdata", "outbound", tt.golden), calls[0].Raw, *updateGolden)
		})
	}
}

func TestParseOutboundConfig(t *testing.T) {
	t.Parallel()
	ch := New(Options{APIBaseURL: "https://cliq.zoho.com/"})
	tests := []struct {
		name     string
		settings string
		creds    string
		wantBase string
		wantErr  bool
	}{
		{name: "default data centre", creds: `{"access_token":"1000.x"}`, wantBase: "https://cliq.zoho.com"},
		{name: "account data centre", settings: `{"api_base_url":"https://cliq.zoho.eu/"}`, creds: `{"access_token":"1000.x"}`, wantBase: "https://cliq.zoho.eu"},
		{name: "inbound settings are not checked", settings: `{"mode":"rsa"}`, creds: `{"access_token":"1000.x"}`, wantBase: "https://cliq.zoho.com"},
		{name: "no access token", creds: `{}`, wantErr: true},
		{name: "no credentials", wantErr: true},
		{name: "access token with a space", creds: `{"access_token":"1000 x"}`, wantErr: true},
		{name: "api_base_url not http(s)", settings: `{"api_base_url":"ftp://cliq.zoho.eu"}`, creds: `{"access_token":"1000.x"}`, wantErr: true},
		{name: "settings not an object", settings: `"eu"`, creds: `{"access_token":"1000.x"}`, wantErr: true},
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
			cfg, err := ch.ParseOutboundConfig(acct)
			_, outErr := ch.NewOutbound(acct)
			if tt.wantErr {
				require.ErrorIs(t, err, channels.ErrInvalidConfig)
				require.ErrorIs(t, outErr, channels.ErrInvalidConfig)
				return
			}
			require.NoError(t, err)
			require.NoError(t, outErr)
			require.Equal(t, tt.wantBase, cfg.APIBaseURL)
		})
	}
}
