package channelstest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// Google's identities in a fake's tokens.
const (
	googleChatIssuer = "chat@system.gserviceaccount.com"
	googleOIDCIssuer = "https://accounts.google.com"
)

// FakeGoogle is a local Google for one Chat app: the OAuth token endpoint
// (POST /token, the JWT-bearer grant of one service-account key, issuing
// access tokens that live Lifetime), Chat's signing keys (GET /certs, x509
// certificates by key id; GET /oidc/certs, a JWKS) and the Chat API (POST
// /v1/spaces/{space}/messages, PATCH and DELETE /v1/spaces/{space}/messages/{id},
// GET /v1/media/{resource}), accepting only unexpired tokens it issued.
// Point an account's settings at it with Settings.
type FakeGoogle struct {
	URL string
	// ClientEmail and KeyID name the service-account key it accepts.
	ClientEmail, KeyID string

	saKey, chatKey, oidcKey *rsa.PrivateKey
	chatCert                []byte

	mu          sync.Mutex
	lifetime    time.Duration
	oauth       tokenEndpoint
	revoked     bool
	refused     int
	throttle    int    // the next sends answered 429
	retryAfter  string // their Retry-After
	throttled   int
	log         []FakeChatCall
	byRequestID map[string]string
	messages    map[string]string // name → text
	nextID      int
	media       map[string][]byte
}

// FakeChatCall is one call the fake Chat API accepted.
type FakeChatCall struct {
	Method, Path, Query string
	Body                map[string]any
}

// NewFakeGoogle starts a fake whose access tokens live lifetime, closed
// at the test's end.
func NewFakeGoogle(t testing.TB, lifetime time.Duration) *FakeGoogle {
	f := &FakeGoogle{ClientEmail: "mio@project.iam.gserviceaccount.com", KeyID: "sa-key-1",
		saKey: rsaKey(t), chatKey: rsaKey(t), oidcKey: rsaKey(t), lifetime: lifetime,
		byRequestID: map[string]string{}, messages: map[string]string{}, media: map[string][]byte{}}
	f.oauth = tokenEndpoint{tokens: map[string]time.Time{},
		refuse: func(w http.ResponseWriter, code, description string) {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
		}}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: googleChatIssuer},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &f.chatKey.PublicKey, f.chatKey)
	require.NoError(t, err)
	f.chatCert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func rsaKey(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}

// Key ids of the fake's Chat signing keys.
const (
	FakeChatKeyID = "chat-key-1"
	FakeOIDCKeyID = "oidc-key-1"
)

// Credentials is the service-account key file the fake's token endpoint
// accepts.
func (f *FakeGoogle) Credentials() json.RawMessage {
	der, _ := x509.MarshalPKCS8PrivateKey(f.saKey)
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "mio-test",
		"private_key_id": f.KeyID, "private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": f.ClientEmail, "client_id": "1234", "token_uri": f.URL + "/token"})
	return b
}

// Settings are account settings pointing every URL at the fake, with
// the given audiences (empty ones left out).
func (f *FakeGoogle) Settings(projectNumber, endpointURL string) json.RawMessage {
	m := map[string]string{"api_base_url": f.URL, "token_url": f.URL + "/token", "certs_url": f.URL + "/certs",
		"oidc_certs_url": f.URL + "/oidc/certs"}
	if projectNumber != "" {
		m["project_number"] = projectNumber
	}
	if endpointURL != "" {
		m["endpoint_url"] = endpointURL
	}
	b, _ := json.Marshal(m)
	return b
}

// ChatToken is a project-number token as Chat sends it: issued by
// chat@system.gserviceaccount.com for audience, at iat, living an hour
// from then, signed with the fake's certificate key.
func (f *FakeGoogle) ChatToken(t testing.TB, audience string, iat time.Time) string {
	return SignGoogleToken(t, f.chatKey, FakeChatKeyID, jwt.MapClaims{"iss": googleChatIssuer, "aud": audience,
		"iat": iat.Unix(), "exp": iat.Add(time.Hour).Unix()})
}

// OIDCToken is an ID token as Chat sends it for an endpoint URL audience:
// issued by accounts.google.com, email chat@system.gserviceaccount.com.
func (f *FakeGoogle) OIDCToken(t testing.TB, audience string, iat time.Time) string {
	return SignGoogleToken(t, f.oidcKey, FakeOIDCKeyID, jwt.MapClaims{"iss": googleOIDCIssuer, "aud": audience,
		"email": googleChatIssuer, "email_verified": true, "sub": "1234567890",
		"iat": iat.Unix(), "exp": iat.Add(time.Hour).Unix()})
}

// SignGoogleToken signs claims with key (RS256) under key id kid: the
// fake's tokens, and forgeries with another key.
func SignGoogleToken(t testing.TB, key *rsa.PrivateKey, kid string, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// ChatKey and OIDCKey are the fake's signing keys of the two token
// forms, for tokens with unusual claims.
func (f *FakeGoogle) ChatKey() *rsa.PrivateKey { return f.chatKey }

// OIDCKey is the signing key of the fake's ID tokens.
func (f *FakeGoogle) OIDCKey() *rsa.PrivateKey { return f.oidcKey }

// NewRSAKey returns a fresh 2048-bit key (a forger's).
func NewRSAKey(t testing.TB) *rsa.PrivateKey { return rsaKey(t) }

// Throttle answers the next n sends 429 with Retry-After retryAfter
// ("" for none).
func (f *FakeGoogle) Throttle(n int, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.throttle, f.retryAfter = n, retryAfter
}

// Revoke deletes the service-account key: token requests are then
// answered 400 invalid_grant, as Google does.
func (f *FakeGoogle) Revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = true
}

// PutMedia serves data at GET /v1/media/{resource}?alt=media.
func (f *FakeGoogle) PutMedia(resource string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.media[resource] = data
}

// TokenRequests is how many token requests arrived.
func (f *FakeGoogle) TokenRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.oauth.requests
}

// Refused is how many API calls were answered 401; Throttled how many 429.
func (f *FakeGoogle) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// Throttled is how many API calls were answered 429.
func (f *FakeGoogle) Throttled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.throttled
}

// Calls are the API calls the fake accepted, in order.
func (f *FakeGoogle) Calls() []FakeChatCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FakeChatCall(nil), f.log...)
}

// Text is the current text of message name ("" when none or deleted).
func (f *FakeGoogle) Text(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.messages[name]
}

func (f *FakeGoogle) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		f.token(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/certs":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_ = json.NewEncoder(w).Encode(map[string]string{FakeChatKeyID: string(f.chatCert)})
	case r.Method == http.MethodGet && r.URL.Path == "/oidc/certs":
		w.Header().Set("Content-Type", "application/json")
		enc := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "alg": "RS256", "use": "sig",
			"kid": FakeOIDCKeyID, "n": enc(f.oidcKey.N.Bytes()), "e": enc(big.NewInt(int64(f.oidcKey.E)).Bytes())}}})
	case strings.HasPrefix(r.URL.Path, "/v1/"):
		f.api(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *FakeGoogle) token(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.oauth.serve(w, r, map[string]grant{"urn:ietf:params:oauth:grant-type:jwt-bearer": f.jwtBearer})
}

// jwtBearer checks the JWT-bearer grant: the assertion signed by the
// service-account key, issued by its email for the token endpoint, with
// scope chat.bot and a lifetime of at most an hour. f.mu held.
func (f *FakeGoogle) jwtBearer(w http.ResponseWriter, form url.Values) {
	var claims jwt.MapClaims
	_, err := jwt.ParseWithClaims(form.Get("assertion"), &claims, func(t *jwt.Token) (any, error) {
		if t.Header["kid"] != f.KeyID {
			return nil, fmt.Errorf("unknown kid")
		}
		return &f.saKey.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(f.URL+"/token"), jwt.WithIssuer(f.ClientEmail),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil || f.revoked {
		f.oauth.refuse(w, "invalid_grant", "Invalid JWT Signature.")
		return
	}
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	if claims["scope"] != "https://www.googleapis.com/auth/chat.bot" || iat == nil || exp.Sub(iat.Time) > time.Hour {
		f.oauth.refuse(w, "invalid_scope", "bad scope or lifetime")
		return
	}
	tok := f.oauth.issue("ya29.fake.%d", time.Now().Add(f.lifetime))
	_, _ = fmt.Fprintf(w, `{"access_token":%q,"expires_in":%d,"token_type":"Bearer"}`, tok, int(f.lifetime.Seconds()))
}

func (f *FakeGoogle) api(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if _, valid := f.oauth.check(tok, time.Now()); !valid {
		f.refused++
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`))
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	if r.Method == http.MethodGet && strings.HasPrefix(path, "media/") && r.URL.Query().Get("alt") == "media" {
		data, ok := f.media[strings.TrimPrefix(path, "media/")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
		return
	}
	if f.throttle > 0 && r.Method != http.MethodGet {
		f.throttle--
		f.throttled++
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED"}}`))
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	call := FakeChatCall{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body}
	text, _ := body["text"].(string)
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		if name, ok := f.byRequestID[r.URL.Query().Get("requestId")]; ok && r.URL.Query().Get("requestId") != "" {
			_ = json.NewEncoder(w).Encode(map[string]string{"name": name})
			return
		}
		f.nextID++
		name := fmt.Sprintf("%s/m%d.m%d", path, f.nextID, f.nextID)
		f.messages[name] = text
		if id := r.URL.Query().Get("requestId"); id != "" {
			f.byRequestID[id] = name
		}
		f.log = append(f.log, call)
		_ = json.NewEncoder(w).Encode(map[string]any{"name": name, "text": text})
	case r.Method == http.MethodPatch || r.Method == http.MethodDelete:
		if _, ok := f.messages[path]; !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":404,"message":"Message not found.","status":"NOT_FOUND"}}`))
			return
		}
		f.log = append(f.log, call)
		if r.Method == http.MethodDelete {
			delete(f.messages, path)
			_, _ = w.Write([]byte(`{}`))
			return
		}
		f.messages[path] = text
		_ = json.NewEncoder(w).Encode(map[string]any{"name": path, "text": text})
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":404,"message":"Not found.","status":"NOT_FOUND"}}`))
	}
}
