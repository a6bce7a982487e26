package googlechat

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miohq/mio/channels"
)

// The JWT-bearer grant (RFC 7523) of a service-account key.
const (
	// GrantKind names the grant in reasons and logs.
	GrantKind = "google service-account key"
	// Scope is the scope of the app's tokens: Chat as the app.
	Scope = "https://www.googleapis.com/auth/chat.bot"
	// GrantType is the JWT-bearer grant type.
	GrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// AssertionLifetime is the assertion's exp - iat: Google takes at
	// most an hour.
	AssertionLifetime = time.Hour
	// DefaultTokenLifetime is assumed when the answer has no expires_in.
	DefaultTokenLifetime = time.Hour
	// opToken prefixes every token request error.
	opToken = "google_chat: obtain access token"
)

// refusals are the OAuth error codes with which Google refuses a key for
// good: the key deleted or disabled ("Invalid JWT Signature."), the
// service account deleted, the client not allowed.
var refusals = map[string]bool{
	"invalid_grant":       true,
	"invalid_client":      true,
	"unauthorized_client": true,
}

var _ channels.TokenGranter = (*Channel)(nil)

// keyJSON is a service-account key file.
type keyJSON struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	ClientID     string `json:"client_id"`
	TokenURI     string `json:"token_uri"`
}

// readKey decodes the account's credentials: nil when they hold no key.
func (c *Channel) readKey(acct channels.Account) (*keyJSON, error) {
	var k keyJSON
	if err := channels.DecodeObject("google_chat credentials", acct.Credentials, &k); err != nil {
		return nil, err
	}
	if k.PrivateKey == "" && k.ClientEmail == "" {
		return nil, nil
	}
	return &k, nil
}

// Grant reads the account's service-account key (client_email,
// private_key, private_key_id, token_uri): nil when the credentials hold
// none. The token endpoint is settings token_url, else the key's
// token_uri, else Options.TokenURL.
func (c *Channel) Grant(acct channels.Account) (channels.Grant, error) {
	k, err := c.readKey(acct)
	if err != nil || k == nil {
		return nil, err
	}
	if k.Type != "" && k.Type != "service_account" {
		return nil, invalidf("credentials type %q, want service_account (a service-account key file)", k.Type)
	}
	if k.ClientEmail == "" || k.PrivateKey == "" {
		return nil, invalidf("credentials client_email and private_key are required (the service-account key file)")
	}
	if channels.HasSpaceOrControl(k.ClientEmail) || channels.HasSpaceOrControl(k.PrivateKeyID) {
		return nil, invalidf("credentials client_email or private_key_id contains whitespace or control characters")
	}
	priv, err := parsePrivateKey(k.PrivateKey)
	if err != nil {
		return nil, invalidf("credentials private_key: %v", err)
	}
	var s settingsJSON
	if err := channels.DecodeObject("google_chat settings", acct.Settings, &s); err != nil {
		return nil, err
	}
	tokenURL, what := c.opts.TokenURL, ""
	switch {
	case s.TokenURL != "":
		tokenURL, what = s.TokenURL, "google_chat settings token_url"
	case k.TokenURI != "":
		tokenURL, what = k.TokenURI, "google_chat credentials token_uri"
	}
	if what != "" {
		if tokenURL, err = c.opts.APIBasePolicy.Check(what, tokenURL); err != nil {
			return nil, err
		}
	}
	return &grant{tokenURL: tokenURL, client: c.opts.HTTPClient, now: c.opts.Now,
		email: k.ClientEmail, kid: k.PrivateKeyID, key: priv}, nil
}

// parsePrivateKey reads an RSA private key from PEM: PKCS#8, as Google
// issues them, or PKCS#1.
func parsePrivateKey(p string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil {
		return nil, fmt.Errorf("not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("not an RSA key (%T)", k)
		}
		return rk, nil
	}
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS#8 or PKCS#1 RSA private key")
	}
	return k, nil
}

// grant signs assertions with a service-account key and exchanges them.
type grant struct {
	tokenURL string
	client   *http.Client
	now      func() time.Time
	email    string
	kid      string
	key      *rsa.PrivateKey
}

func (g *grant) Kind() string { return GrantKind }

// assertion is the signed JWT: issued by the service account for the
// token endpoint, scope chat.bot, living AssertionLifetime.
func (g *grant) assertion() (string, error) {
	now := g.now()
	claims := jwt.MapClaims{
		"iss":   g.email,
		"scope": Scope,
		"aud":   g.tokenURL,
		"iat":   now.Unix(),
		"exp":   now.Add(AssertionLifetime).Unix(),
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	if g.kid != "" {
		tok.Header["kid"] = g.kid
	}
	return tok.SignedString(g.key)
}

// tokenAnswer is the token endpoint's answer.
type tokenAnswer struct {
	AccessToken      string      `json:"access_token"`
	ExpiresIn        json.Number `json:"expires_in"`
	TokenType        string      `json:"token_type"`
	Error            string      `json:"error"`
	ErrorDescription string      `json:"error_description"`
}

// Exchange posts a fresh assertion (grant_type jwt-bearer, form encoded)
// to the token endpoint. An error code of refusals is a
// *channels.GrantRefusedError — except a refusal of the assertion's
// times (clock skew), which is transient; 429 is rate limited; 5xx,
// network failures and other answers are transient. The answer's body
// never reaches an error.
func (g *grant) Exchange(ctx context.Context) (*channels.AccessToken, error) {
	assertion, err := g.assertion()
	if err != nil {
		return nil, channels.Permanent(opToken, fmt.Errorf("sign the assertion: %w", err))
	}
	form := url.Values{"grant_type": {GrantType}, "assertion": {assertion}}
	resp, err := channels.CallAPI(ctx, g.client, channels.APIRequest{
		Op: opToken, URL: g.tokenURL, Body: []byte(form.Encode()), MaxAnswer: 64 << 10,
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {channels.MediaTypeJSON}},
	})
	if err != nil {
		return nil, err
	}
	var a tokenAnswer
	decodeErr := json.Unmarshal(resp.Body, &a)
	code := boundCode(a.Error)
	switch {
	case resp.Status == http.StatusTooManyRequests:
		wait := channels.RetryAfter(resp.Header, time.Now(), time.Minute)
		return nil, &channels.RateLimitedError{RetryAfter: wait, Err: fmt.Errorf("%s: HTTP 429", opToken)}
	case resp.Status >= 500:
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d", opToken, resp.Status)}
	case refusals[code] && !skewed(a.ErrorDescription):
		return nil, &channels.GrantRefusedError{Kind: GrantKind, Reason: code}
	case code != "":
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d, error %q", opToken, resp.Status, code)}
	case resp.Status != http.StatusOK:
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d", opToken, resp.Status)}
	case decodeErr != nil || a.AccessToken == "":
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: the answer holds no access_token", opToken)}
	case channels.HasSpaceOrControl(a.AccessToken):
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: the access_token holds whitespace or control characters", opToken)}
	}
	lifetime := DefaultTokenLifetime
	if n, err := a.ExpiresIn.Int64(); err == nil && n > 0 {
		lifetime = time.Duration(n) * time.Second
	}
	return &channels.AccessToken{Token: a.AccessToken, Lifetime: lifetime}, nil
}

// skewed reports whether Google refused the assertion for its iat or exp
// ("Invalid JWT: Token must be a short-lived token (60 minutes) and in a
// reasonable timeframe"): the local clock, not the key.
func skewed(description string) bool {
	d := strings.ToLower(description)
	return strings.Contains(d, "timeframe") || strings.Contains(d, "iat") || strings.Contains(d, "exp ")
}

// boundCode keeps an error code short and printable: it reaches logs,
// dead letters and the account's disabled_reason.
func boundCode(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}
