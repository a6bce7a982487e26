package zohocliq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// Zoho OAuth.
const (
	// GrantKind names the refresh-token grant in reasons and logs.
	GrantKind = "zoho refresh token"
	// DefaultTokenLifetime is assumed when Zoho's answer has no
	// expires_in: Zoho's access tokens live an hour.
	DefaultTokenLifetime = time.Hour
	// opToken prefixes every token request error.
	opToken = "zoho_cliq: refresh access token"
)

// refusals are the error codes with which Zoho refuses a grant for good:
// the refresh token is revoked or unknown, the client deleted or its
// secret changed. Other errors are retried.
var refusals = map[string]bool{
	"invalid_code":          true,
	"invalid_client":        true,
	"invalid_client_secret": true,
	"invalid_grant":         true,
	"unauthorized_client":   true,
	"invalid_refresh_token": true,
}

var _ channels.TokenGranter = (*Channel)(nil)

// grantJSON is a refresh-token grant in the account's credentials.
type grantJSON struct {
	ClientID       string `json:"client_id"`
	ClientSecret   string `json:"client_secret"`
	RefreshToken   string `json:"refresh_token"`
	AccountsServer string `json:"accounts_server"`
	AccessToken    string `json:"access_token"`
}

func (g *grantJSON) present() bool {
	return g.ClientID != "" || g.ClientSecret != "" || g.RefreshToken != "" || g.AccountsServer != ""
}

// Grant reads the account's refresh-token grant from its credentials
// (client_id, client_secret, refresh_token, accounts_server): nil when
// they hold none (a static access_token). accounts_server is the accounts
// server of the account's data centre (https://accounts.zoho.com,
// .eu, .in, .com.au, .jp, …); plain http only to a loopback host the
// APIBasePolicy allows http for (a local fake in tests).
func (c *Channel) Grant(acct channels.Account) (channels.Grant, error) {
	var g grantJSON
	if err := channels.DecodeObject("zoho_cliq credentials", acct.Credentials, &g); err != nil {
		return nil, err
	}
	if !g.present() {
		return nil, nil
	}
	if g.AccessToken != "" {
		return nil, invalidf("credentials: give either access_token (static, not renewed) or a refresh-token grant, not both")
	}
	for _, f := range []struct{ name, value string }{{"client_id", g.ClientID}, {"client_secret", g.ClientSecret},
		{"refresh_token", g.RefreshToken}, {"accounts_server", g.AccountsServer}} {
		if f.value == "" {
			return nil, invalidf("credentials %s is required with a refresh-token grant (client_id, client_secret, refresh_token, accounts_server)", f.name)
		}
		if channels.HasSpaceOrControl(f.value) {
			return nil, invalidf("credentials %s contains whitespace or control characters", f.name)
		}
	}
	server, err := c.accountsServer(g.AccountsServer)
	if err != nil {
		return nil, err
	}
	return &grant{tokenURL: server + "/oauth/v2/token", client: c.opts.HTTPClient,
		form: url.Values{"grant_type": {"refresh_token"}, "client_id": {g.ClientID},
			"client_secret": {g.ClientSecret}, "refresh_token": {g.RefreshToken}}}, nil
}

// accountsServer checks an accounts_server URL: https, or http to a
// loopback host the policy allows http for; no path, query or user info.
func (c *Channel) accountsServer(raw string) (string, error) {
	const what = "zoho_cliq credentials accounts_server"
	base, err := c.opts.APIBasePolicy.Check(what, raw)
	if err != nil && !strings.HasPrefix(raw, "http://") {
		return "", err
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		return "", invalidf("credentials accounts_server %q is not a URL", raw)
	}
	if u.Scheme == "http" {
		if err != nil || !isLoopback(u.Hostname()) {
			return "", invalidf("credentials accounts_server %q must be https (e.g. https://accounts.zoho.com; http only to a loopback host in tests)", raw)
		}
	}
	if strings.Trim(u.Path, "/") != "" {
		return "", invalidf("credentials accounts_server %q must be the server's origin, without a path (e.g. https://accounts.zoho.eu)", raw)
	}
	return strings.TrimRight(base, "/"), nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// grant exchanges a refresh token at Zoho's accounts server.
type grant struct {
	tokenURL string
	client   *http.Client
	form     url.Values
}

func (g *grant) Kind() string { return GrantKind }

// tokenAnswer is Zoho's answer to a token request. Some errors come with
// HTTP 200 and an error field.
type tokenAnswer struct {
	AccessToken string          `json:"access_token"`
	ExpiresIn   json.Number     `json:"expires_in"`
	APIDomain   string          `json:"api_domain"`
	TokenType   string          `json:"token_type"`
	Error       json.RawMessage `json:"error"`
}

// Exchange posts grant_type=refresh_token (form encoded) to
// {accounts_server}/oauth/v2/token. An error field — in a 200 answer too —
// naming a refusal (invalid_code, invalid_client, …) is a
// *channels.GrantRefusedError; 429 is rate limited; 5xx, network failures
// and other errors are transient. The answer's body never reaches an
// error (it may hold a token).
func (g *grant) Exchange(ctx context.Context) (*channels.AccessToken, error) {
	resp, err := channels.CallAPI(ctx, g.client, channels.APIRequest{
		Op: opToken, URL: g.tokenURL, Body: []byte(g.form.Encode()), MaxAnswer: 64 << 10,
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {channels.MediaTypeJSON}},
	})
	if err != nil {
		return nil, err
	}
	var a tokenAnswer
	decodeErr := json.Unmarshal(resp.Body, &a)
	code := errorCode(a.Error)
	switch {
	case code != "" && refusals[strings.ToLower(code)]:
		return nil, &channels.GrantRefusedError{Kind: GrantKind, Reason: code}
	case resp.Status == http.StatusTooManyRequests:
		wait := channels.RetryAfter(resp.Header, time.Now(), time.Minute)
		return nil, &channels.RateLimitedError{RetryAfter: wait, Err: fmt.Errorf("%s: HTTP 429", opToken)}
	case resp.Status >= 500:
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d", opToken, resp.Status)}
	case code != "":
		// "Access Denied" (too many requests) and the like.
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

// errorCode reads Zoho's error field: a string, or an object's code.
func errorCode(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return boundCode(s)
	}
	var o struct {
		Code any `json:"code"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Code != nil {
		return boundCode(fmt.Sprint(o.Code))
	}
	return "unreadable error"
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

// staticTokens is the TokenSource of an account with a static
// access_token: never renewed.
type staticTokens string

func (s staticTokens) Token(context.Context) (string, error) { return string(s), nil }

func (s staticTokens) Renew(context.Context, string) (string, error) {
	return "", channels.Permanent(opSend, channels.ErrStaticTokenRefused)
}

// errNoRenewal: an account with a grant whose adapter was built without
// a TokenSource.
var errNoRenewal = errors.New("credentials hold a refresh-token grant but no token renewal is configured")
