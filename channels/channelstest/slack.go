package channelstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// FakeSlack is a local Slack Web API for one app: POST /oauth.v2.access
// exchanges its install Code (grant_type=authorization_code) and, with
// Rotating, refresh tokens (grant_type=refresh_token), each refresh token
// once — Slack revokes a refresh token when it issues the next one — and
// POST /chat.postMessage accepts only a token it issued that has not
// expired (ok:false token_expired otherwise). The client authenticates
// with HTTP Basic. It also speaks AI-app streaming (slack_stream.go):
// chat.startStream, chat.appendStream and chat.stopStream, and
// chat.update of the streamed messages, with their documented rate
// tiers. Point an account's api_base_url at URL.
type FakeSlack struct {
	URL string
	// ClientID, ClientSecret are the app's client; Code the install's
	// authorization code; TeamID the workspace installed.
	ClientID, ClientSecret, Code, TeamID string

	mu       sync.Mutex
	now      func() time.Time
	rotating bool
	lifetime time.Duration
	oauth    tokenEndpoint
	refresh  map[string]bool // issued refresh token → spent
	reused   int             // refresh requests with a spent refresh token
	sent     int
	refused  int
	// streams holds chat.startStream's messages by ts; calls the times of
	// each method's recent calls (its rate window); limited counts 429s.
	streams map[string]*SlackStream
	calls   map[string][]time.Time
	limited int
}

// NewFakeSlack starts a fake closed at the test's end. With rotating its
// access tokens live lifetime on now's clock (nil: time.Now) and come
// with refresh tokens; without, the install's bot token never expires.
func NewFakeSlack(t testing.TB, rotating bool, lifetime time.Duration, now func() time.Time) *FakeSlack {
	if now == nil {
		now = time.Now
	}
	f := &FakeSlack{ClientID: "1111.2222", ClientSecret: "slack-client-secret", Code: "slack-code", TeamID: "T0TEAM",
		now: now, rotating: rotating, lifetime: lifetime, refresh: map[string]bool{},
		streams: map[string]*SlackStream{}, calls: map[string][]time.Time{}}
	f.oauth = tokenEndpoint{basicAuth: true, client: func() (string, string) { return f.ClientID, f.ClientSecret },
		badClient: "invalid_client_id", badForm: "invalid_arguments", tokens: map[string]time.Time{StaticBotToken: {}},
		refuse: func(w http.ResponseWriter, code, _ string) { _, _ = fmt.Fprintf(w, `{"ok":false,"error":%q}`, code) }}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// AppCredentials are the app's client credentials, as an install takes
// them.
func (f *FakeSlack) AppCredentials() json.RawMessage {
	b, _ := json.Marshal(map[string]string{"client_id": f.ClientID, "client_secret": f.ClientSecret})
	return b
}

// TokenRequests is how many oauth.v2.access requests arrived.
func (f *FakeSlack) TokenRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.oauth.requests
}

// Reused is how many refresh requests came with a spent refresh token.
func (f *FakeSlack) Reused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reused
}

// Sent is how many messages were accepted.
func (f *FakeSlack) Sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent
}

// Refused is how many sends were refused for their token.
func (f *FakeSlack) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

func (f *FakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/oauth.v2.access":
		f.token(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/chat.postMessage":
		f.post(w, r)
	case r.Method == http.MethodPost && slackStreamRates[strings.TrimPrefix(r.URL.Path, "/")] > 0:
		f.stream(w, r, strings.TrimPrefix(r.URL.Path, "/"))
	default:
		http.NotFound(w, r)
	}
}

func (f *FakeSlack) token(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.oauth.serve(w, r, map[string]grant{"authorization_code": f.exchangeCode, "refresh_token": f.refreshGrant})
}

// exchangeCode answers the install's code exchange (once), f.mu held.
func (f *FakeSlack) exchangeCode(w http.ResponseWriter, form url.Values) {
	if f.Code == "" || form.Get("code") != f.Code {
		f.oauth.refuse(w, "invalid_code", "")
		return
	}
	f.Code = "" // a code works once
	f.issueTokens(w)
}

// refreshGrant spends a refresh token it issued, f.mu held.
func (f *FakeSlack) refreshGrant(w http.ResponseWriter, form url.Values) {
	rt := form.Get("refresh_token")
	spent, known := f.refresh[rt]
	if !f.rotating || !known || spent {
		if known {
			f.reused++
		}
		f.oauth.refuse(w, "invalid_refresh_token", "")
		return
	}
	f.refresh[rt] = true
	f.issueTokens(w)
}

// issueTokens answers a granted request: a bot token that never expires,
// or with rotation an expiring one and its refresh token.
func (f *FakeSlack) issueTokens(w http.ResponseWriter) {
	if !f.rotating {
		tok := f.oauth.issue("xoxb-static-%d", time.Time{})
		_, _ = fmt.Fprintf(w, `{"ok":true,"access_token":%q,"token_type":"bot","scope":"chat:write","bot_user_id":"UBOT","app_id":"A1","team":{"id":%q,"name":"Team"},"enterprise":null}`,
			tok, f.TeamID)
		return
	}
	tok := f.oauth.issue("xoxe.xoxb-%d", f.now().Add(f.lifetime))
	rt := fmt.Sprintf("xoxe-1-refresh-%d", f.oauth.issued)
	f.refresh[rt] = false
	_, _ = fmt.Fprintf(w, `{"ok":true,"access_token":%q,"token_type":"bot","scope":"chat:write","bot_user_id":"UBOT","app_id":"A1","team":{"id":%q,"name":"Team"},"enterprise":null,"refresh_token":%q,"expires_in":%d}`,
		tok, f.TeamID, rt, int(f.lifetime.Seconds()))
}

func (f *FakeSlack) post(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	known, valid := f.oauth.check(tok, f.now())
	switch {
	case !known:
		f.refused++
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
	case !valid:
		f.refused++
		_, _ = w.Write([]byte(`{"ok":false,"error":"token_expired"}`))
	default:
		f.sent++
		_, _ = fmt.Fprintf(w, `{"ok":true,"channel":"C1","ts":"1700000000.%06d"}`, f.sent)
	}
}
