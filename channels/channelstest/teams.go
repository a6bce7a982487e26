package channelstest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// FakeTeams is a local Bot Framework for one bot: the OpenID metadata
// (GET /openid) and key set (GET /keys, one RSA key endorsed for
// msteams) inbound tokens are checked with, the client-credentials token
// endpoint (POST /token) issuing tokens that live Lifetime, and the Bot
// Connector under /teams (POST, PUT and DELETE
// /teams/v3/conversations/{conversation}/activities[/{id}]) accepting only
// unexpired tokens it issued (else 401), under any first path segment
// as well (a regional service URL, URL+"/amer/"). Point a Teams
// account's api_base_url at URL+"/teams", token_url at URL+"/token" and
// openid_metadata_url at URL+"/openid".
type FakeTeams struct {
	URL string
	// AppID and ClientSecret are the credentials it accepts.
	AppID, ClientSecret string
	// KeyID names the signing key.
	KeyID string

	key, forger *rsa.PrivateKey

	mu           sync.Mutex
	lifetime     time.Duration
	endorsements []string
	oauth        tokenEndpoint
	keyReqs      int
	revoked      bool
	limitNext    int // the next connector calls answered 429
	retryAfter   int
	calls        []TeamsCall
	limited      []time.Time
	refused      int
	loseNext     int // the next accepted connector calls answered 502
	streams      map[string]*TeamsStream
}

// TeamsStream is one streamed bot message as the fake holds it: its
// conversation, the text of its last update (each carries the whole
// text), of its final message or of an update activity (PUT) after it
// ended, its last streamSequence, whether the final message came, and
// whether the user stopped it (StopStream).
type TeamsStream struct {
	Conversation string
	Text         string
	Sequence     int
	Final        bool
	Stopped      bool
}

// TeamsCall is one Bot Connector call the fake accepted.
type TeamsCall struct {
	Method string
	// Region is the first path segment ("teams": the account's
	// api_base_url).
	Region string
	// Path is the escaped path below it.
	Path string
	// Activity is the body (nil for DELETE).
	Activity map[string]any
	// At is when it arrived.
	At time.Time
}

// NewFakeTeams starts a fake whose tokens live lifetime, closed at the
// test's end.
func NewFakeTeams(t testing.TB, lifetime time.Duration) *FakeTeams {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	f := &FakeTeams{AppID: "00000000-0000-0000-0000-00000000a11d", ClientSecret: "client~secret", KeyID: "fake-key-1",
		key: key, forger: forger, lifetime: lifetime, endorsements: []string{"msteams"}}
	f.oauth = tokenEndpoint{client: func() (string, string) { return f.AppID, f.ClientSecret }, tokens: map[string]time.Time{},
		refuse: func(w http.ResponseWriter, code, description string) {
			if code != "invalid_client" {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": code})
				return
			}
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": code, "error_description": description})
		}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Settings are account settings pointing every endpoint at the fake.
func (f *FakeTeams) Settings() json.RawMessage {
	b, _ := json.Marshal(map[string]string{"api_base_url": f.URL + "/teams", "token_url": f.URL + "/token",
		"openid_metadata_url": f.URL + "/openid"})
	return b
}

// Credentials are account credentials holding the fake's app.
func (f *FakeTeams) Credentials() json.RawMessage {
	b, _ := json.Marshal(map[string]string{"app_id": f.AppID, "client_secret": f.ClientSecret})
	return b
}

// ServiceURL is the service URL of the activities the fake's bot gets.
func (f *FakeTeams) ServiceURL() string { return f.URL + "/teams/" }

// TokenOptions change one token Sign issues.
type TokenOptions struct {
	// Audience replaces the app id.
	Audience string
	// Issuer replaces https://api.botframework.com.
	Issuer string
	// ServiceURL replaces the activity's serviceUrl.
	ServiceURL string
	// Forged signs with a key of the same kid that is not the fake's.
	Forged bool
	// KeyID replaces the key id.
	KeyID string
	// Lifetime is the token's life from now (default 1 h); negative for
	// an expired token.
	Lifetime time.Duration
}

// Sign returns the "Bearer …" Authorization value the Bot Framework sends
// with activity body at now: a token for the app, its serviceurl the
// activity's serviceUrl, valid from 5 minutes before now.
func (f *FakeTeams) Sign(t testing.TB, body []byte, now time.Time, o TokenOptions) string {
	t.Helper()
	var act struct {
		ServiceURL string `json:"serviceUrl"`
	}
	_ = json.Unmarshal(body, &act)
	aud, iss, svc, kid, life := f.AppID, "https://api.botframework.com", act.ServiceURL, f.KeyID, time.Hour
	if o.Audience != "" {
		aud = o.Audience
	}
	if o.Issuer != "" {
		iss = o.Issuer
	}
	if o.ServiceURL != "" {
		svc = o.ServiceURL
	}
	if o.KeyID != "" {
		kid = o.KeyID
	}
	if o.Lifetime != 0 {
		life = o.Lifetime
	}
	key := f.key
	if o.Forged {
		key = f.forger
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": iss, "aud": aud, "serviceurl": svc,
		"nbf": now.Add(-5 * time.Minute).Unix(), "iat": now.Unix(), "exp": now.Add(life).Unix(),
	})
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return "Bearer " + s
}

// SetEndorsements replaces the channels the signing key is endorsed for.
func (f *FakeTeams) SetEndorsements(e ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endorsements = e
}

// Revoke makes the client secret invalid: token requests are answered 401
// {"error":"invalid_client"}, as the identity platform does.
func (f *FakeTeams) Revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = true
}

// RateLimitNext answers the next n connector calls 429 with Retry-After
// seconds.
func (f *FakeTeams) RateLimitNext(n, seconds int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limitNext, f.retryAfter = n, seconds
}

// LoseNextAnswer makes the next n accepted connector calls take effect
// and then answer 502, as a call whose answer was lost in a timeout.
func (f *FakeTeams) LoseNextAnswer(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseNext = n
}

// StopStream ends stream id as the user's Stop button does: later
// activities of the stream, its final message included, are answered
// 403 ContentStreamNotAllowed, and the message shows what it showed.
func (f *FakeTeams) StopStream(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.streams[id]; ok {
		s.Stopped = true
	}
}

// Calls are the connector calls accepted, in order.
func (f *FakeTeams) Calls() []TeamsCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]TeamsCall(nil), f.calls...)
}

// TokenRequests is how many token requests arrived.
func (f *FakeTeams) TokenRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.oauth.requests
}

// KeyRequests is how many key set requests arrived.
func (f *FakeTeams) KeyRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keyReqs
}

// Limited are the times of the calls answered 429.
func (f *FakeTeams) Limited() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.limited...)
}

// Refused is how many connector calls were answered 401.
func (f *FakeTeams) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

func (f *FakeTeams) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/openid":
		writeJSON(w, http.StatusOK, map[string]any{"issuer": "https://api.botframework.com", "jwks_uri": f.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	case r.Method == http.MethodGet && r.URL.Path == "/keys":
		f.keys(w)
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		f.token(w, r)
	case strings.Contains(r.URL.Path, "/v3/conversations/"):
		f.connector(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *FakeTeams) keys(w http.ResponseWriter) {
	f.mu.Lock()
	f.keyReqs++
	endorsements := f.endorsements
	f.mu.Unlock()
	b, _ := jose.JSONWebKey{Key: &f.key.PublicKey, KeyID: f.KeyID, Use: "sig", Algorithm: "RS256"}.MarshalJSON()
	var k map[string]any
	_ = json.Unmarshal(b, &k)
	k["endorsements"] = endorsements
	writeJSON(w, http.StatusOK, map[string]any{"keys": []any{k}})
}

func (f *FakeTeams) token(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.oauth.serve(w, r, map[string]grant{"client_credentials": f.clientCredentials})
}

// clientCredentials issues a Bot Connector token to the app, f.mu held.
func (f *FakeTeams) clientCredentials(w http.ResponseWriter, form url.Values) {
	if form.Get("scope") != "https://api.botframework.com/.default" {
		f.oauth.refuse(w, "unsupported_grant_type", "")
		return
	}
	if f.revoked || !f.oauth.formClient(form) {
		f.oauth.refuse(w, "invalid_client", "AADSTS7000215: Invalid client secret provided.")
		return
	}
	tok := f.oauth.issue("eyJ0eXAi.fake-access.%d", time.Now().Add(f.lifetime))
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": int(f.lifetime.Seconds()),
		"ext_expires_in": int(f.lifetime.Seconds()), "access_token": tok})
}

func (f *FakeTeams) connector(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if _, valid := f.oauth.check(tok, time.Now()); !valid {
		f.refused++
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Authorization has been denied for this request."})
		return
	}
	if f.limitNext > 0 {
		f.limitNext--
		f.limited = append(f.limited, time.Now())
		w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]string{"code": "TooManyRequests", "message": "throttled"}})
		return
	}
	region, path, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	call := TeamsCall{Method: r.Method, Region: region, Path: "/" + path, At: time.Now()}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &call.Activity)
	}
	if status, code, msg := f.streamed(call); code != "" {
		writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
		return
	}
	f.calls = append(f.calls, call)
	if f.loseNext > 0 {
		f.loseNext--
		writeJSON(w, http.StatusBadGateway, map[string]any{"error": map[string]string{"code": "ServiceError", "message": "bad gateway"}})
		return
	}
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
	case http.MethodPut:
		id := call.Path[strings.LastIndex(call.Path, "/")+1:]
		writeJSON(w, http.StatusOK, map[string]string{"id": id})
	default:
		writeJSON(w, http.StatusCreated, map[string]string{"id": fmt.Sprintf("17000000%05d", len(f.calls))})
	}
}

// Stream returns a copy of stream id (nil: none).
func (f *FakeTeams) Stream(id string) *TeamsStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.streams[id]
	if !ok {
		return nil
	}
	c := *s
	return &c
}

// streamed checks an activity with a streaminfo entity as Teams does and
// keeps its stream: streaming only in personal chats (conversation ids
// "a:…"); the first update is a typing activity without streamId and
// sequence 1, whose answer's id is the streamId; later updates name an
// open stream with a higher sequence and contain the text streamed so
// far; the final one is a message; an activity of a stream that ended
// (its final message taken, or stopped by the user) is answered 403, and
// an update activity (PUT) of its message replaces the text. It returns
// the status and error code of a refused activity ("" when accepted or
// not streamed).
func (f *FakeTeams) streamed(call TeamsCall) (status int, code, msg string) {
	const bad, forbidden = http.StatusBadRequest, http.StatusForbidden
	var info map[string]any
	if es, ok := call.Activity["entities"].([]any); ok {
		for _, e := range es {
			if m, ok := e.(map[string]any); ok && m["type"] == "streaminfo" {
				info = m
			}
		}
	}
	if call.Method == http.MethodPut {
		// An update activity of a streamed message: only once the stream
		// is over (its final message taken, or stopped by the user).
		id := call.Path[strings.LastIndex(call.Path, "/")+1:]
		s, ok := f.streams[id]
		switch {
		case !ok:
		case !s.Final && !s.Stopped:
			return bad, "BadArgument", "a message being streamed is updated by its stream"
		default:
			s.Text, _ = call.Activity["text"].(string)
		}
		return 0, "", ""
	}
	if info == nil || call.Method != http.MethodPost {
		return 0, "", ""
	}
	conv := strings.TrimSuffix(strings.TrimPrefix(call.Path, "/v3/conversations/"), "/activities")
	if !strings.HasPrefix(conv, "a:") {
		return bad, "BadArgument", "streaming is supported in one-on-one chats only"
	}
	if f.streams == nil {
		f.streams = map[string]*TeamsStream{}
	}
	id, _ := info["streamId"].(string)
	seq, _ := info["streamSequence"].(float64)
	text, _ := call.Activity["text"].(string)
	kind, _ := info["streamType"].(string)
	typ, _ := call.Activity["type"].(string)
	s, open := f.streams[id]
	switch {
	case kind != "informative" && kind != "streaming" && kind != "final":
		return bad, "BadArgument", "unknown streamType"
	case id == "" && (kind == "final" || typ != "typing" || seq != 1):
		return bad, "BadArgument", "a stream starts with a typing activity of sequence 1"
	case id == "":
		f.streams[fmt.Sprintf("17000000%05d", len(f.calls)+1)] = &TeamsStream{Conversation: conv, Text: text, Sequence: 1}
		return 0, "", ""
	case !open:
		return forbidden, "ContentStreamNotAllowed", "the stream is not open"
	case s.Final:
		return forbidden, "ContentStreamNotAllowed", "Content stream is not allowed on an already completed streamed message"
	case s.Stopped:
		return forbidden, "ContentStreamNotAllowed", "Content stream was cancelled by the user"
	case kind == "final" && typ != "message":
		return bad, "BadArgument", "a stream ends with a message activity"
	case kind != "final" && (typ != "typing" || int(seq) <= s.Sequence):
		return bad, "BadArgument", "the sequence is out of order"
	case kind == "streaming" && !strings.HasPrefix(text, s.Text):
		return forbidden, "ContentStreamNotAllowed", "Request streamed content should contain the previously streamed content"
	}
	s.Text = text
	if seq > 0 {
		s.Sequence = int(seq)
	}
	s.Final = kind == "final"
	return 0, "", ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// CheckTeamsInvokeResponse checks the body of a bot's answer to an
// adaptiveCard/action invoke as the Teams client takes it: statusCode
// 200 (or absent) with type application/vnd.microsoft.card.adaptive and
// a card, or application/vnd.microsoft.activity.message and a non-empty
// message; Teams shows anything else as an error.
func CheckTeamsInvokeResponse(body []byte) error {
	var r struct {
		StatusCode *int            `json:"statusCode"`
		Type       string          `json:"type"`
		Value      json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("not an invoke response: %w", err)
	}
	if r.StatusCode != nil && *r.StatusCode != http.StatusOK {
		return fmt.Errorf("statusCode %d", *r.StatusCode)
	}
	switch r.Type {
	case "application/vnd.microsoft.card.adaptive":
		var card struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(r.Value, &card) != nil || card.Type != "AdaptiveCard" {
			return fmt.Errorf("the value of a card response is not an Adaptive Card: %s", r.Value)
		}
	case "application/vnd.microsoft.activity.message":
		var msg string
		if json.Unmarshal(r.Value, &msg) != nil || strings.TrimSpace(msg) == "" {
			return fmt.Errorf("the value of a message response is not a message: %s", r.Value)
		}
	default:
		return fmt.Errorf("unexpected response type %q for status code 200", r.Type)
	}
	return nil
}
