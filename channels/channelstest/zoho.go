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

// FakeZoho is a local Zoho accounts server and Cliq API for one OAuth
// client: POST /oauth/v2/token (grant_type=refresh_token, form encoded)
// issues access tokens that live Lifetime, and POST
// /api/v3/chats/{chat}/messages accepts only a token it issued that has
// not expired (else 401). Point a Cliq account's accounts_server and
// api_base_url at URL.
type FakeZoho struct {
	URL string
	// ClientID, ClientSecret and RefreshToken are the grant it accepts.
	ClientID, ClientSecret, RefreshToken string
	// Code is an authorization code it exchanges once
	// (grant_type=authorization_code) for RefreshToken.
	Code string

	mu       sync.Mutex
	lifetime time.Duration
	oauth    tokenEndpoint
	revoked  bool
	fail     int // the next token requests answered 500
	sent     int
	refused  int // sends refused with 401
	onToken  func()
	// refuseSends answers every send 401.
	refuseSends bool
}

// NewFakeZoho starts a fake whose tokens live lifetime, closed at the
// test's end.
func NewFakeZoho(t testing.TB, lifetime time.Duration) *FakeZoho {
	f := &FakeZoho{ClientID: "1000.CLIENT", ClientSecret: "client-secret", RefreshToken: "1000.refresh", Code: "1000.code",
		lifetime: lifetime}
	f.oauth = tokenEndpoint{client: func() (string, string) { return f.ClientID, f.ClientSecret }, tokens: map[string]time.Time{},
		fault:  f.failing,
		refuse: func(w http.ResponseWriter, code, _ string) { _, _ = fmt.Fprintf(w, `{"error":%q}`, code) }}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Credentials are the account credentials holding the fake's grant.
func (f *FakeZoho) Credentials() json.RawMessage {
	b, _ := json.Marshal(map[string]string{"client_id": f.ClientID, "client_secret": f.ClientSecret,
		"refresh_token": f.RefreshToken, "accounts_server": f.URL})
	return b
}

// Revoke makes the refresh token invalid: token requests are then
// answered 200 {"error":"invalid_code"}, as Zoho does.
func (f *FakeZoho) Revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = true
}

// FailNext answers the next n token requests 500.
func (f *FakeZoho) FailNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// ExpireAll makes every issued token expired (the platform revoking them
// early).
func (f *FakeZoho) ExpireAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.oauth.expireAll()
}

// RefuseSends answers every send 401, whatever its token.
func (f *FakeZoho) RefuseSends() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseSends = true
}

// OnToken, when set, runs at each token request before it is answered.
func (f *FakeZoho) OnToken(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onToken = fn
}

// TokenRequests is how many token requests arrived; Issued how many
// tokens were issued.
func (f *FakeZoho) TokenRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.oauth.requests
}

// Issued is how many access tokens the fake issued.
func (f *FakeZoho) Issued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.oauth.issued
}

// Sent is how many messages were accepted; Refused how many sends were
// answered 401.
func (f *FakeZoho) Sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent
}

// Refused is how many sends were answered 401.
func (f *FakeZoho) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

func (f *FakeZoho) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/oauth/v2/token":
		f.token(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/v3/chats/") && strings.HasSuffix(r.URL.Path, "/messages"):
		f.message(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *FakeZoho) token(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	hook := f.onToken
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.oauth.serve(w, r, map[string]grant{"authorization_code": f.exchangeCode, "refresh_token": f.refreshGrant})
}

// failing answers a token request 500 while FailNext's count lasts, f.mu
// held.
func (f *FakeZoho) failing(w http.ResponseWriter) bool {
	if f.fail == 0 {
		return false
	}
	f.fail--
	http.Error(w, "internal error", http.StatusInternalServerError)
	return true
}

// refreshGrant issues an access token for the refresh token, f.mu held.
func (f *FakeZoho) refreshGrant(w http.ResponseWriter, form url.Values) {
	if !f.oauth.formClient(form) {
		f.oauth.refuse(w, "invalid_client", "")
		return
	}
	if f.revoked || form.Get("refresh_token") != f.RefreshToken {
		f.oauth.refuse(w, "invalid_code", "")
		return
	}
	tok := f.oauth.issue("1000.access.%d", time.Now().Add(f.lifetime))
	_, _ = fmt.Fprintf(w, `{"access_token":%q,"api_domain":"https://www.zohoapis.com","token_type":"Bearer","expires_in":%d}`,
		tok, int(f.lifetime.Seconds()))
}

// exchangeCode answers an authorization code exchange, f.mu held.
func (f *FakeZoho) exchangeCode(w http.ResponseWriter, form url.Values) {
	if !f.oauth.formClient(form) {
		f.oauth.refuse(w, "invalid_client", "")
		return
	}
	if f.Code == "" || form.Get("code") != f.Code || form.Get("redirect_uri") == "" {
		f.oauth.refuse(w, "invalid_code", "")
		return
	}
	f.Code = ""
	tok := f.oauth.issue("1000.access.%d", time.Now().Add(f.lifetime))
	_, _ = fmt.Fprintf(w, `{"access_token":%q,"refresh_token":%q,"api_domain":"https://www.zohoapis.com","token_type":"Bearer","expires_in":%d}`,
		tok, f.RefreshToken, int(f.lifetime.Seconds()))
}

func (f *FakeZoho) message(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Zoho-oauthtoken ")
	if _, valid := f.oauth.check(tok, time.Now()); !valid || f.refuseSends {
		f.refused++
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code":"oauthtoken_invalid","message":"Invalid OAuth token."}`))
		return
	}
	f.sent++
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"message_id":"%d"}`, 9000+f.sent)
}
