package slack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// Slack token rotation (https://docs.slack.dev/authentication/using-token-rotation):
// an app with rotation on gets, at install, an access token that expires
// (12 hours) and a refresh token; oauth.v2.access with
// grant_type=refresh_token returns a new access token and a new refresh
// token, and the old refresh token is revoked.
const (
	// GrantKind names the rotating refresh-token grant in reasons and logs.
	GrantKind = "slack refresh token"
	// DefaultTokenLifetime is assumed when Slack's answer has no
	// expires_in.
	DefaultTokenLifetime = 12 * time.Hour
	opToken              = "slack: oauth.v2.access"
)

// refusals are the oauth.v2.access error codes with which Slack refuses a
// grant for good: the refresh token or the app's client is revoked or
// unknown. Other errors are retried.
var refusals = map[string]bool{
	"invalid_refresh_token": true,
	"invalid_grant":         true,
	"invalid_client_id":     true,
	"bad_client_secret":     true,
	"token_revoked":         true,
	"app_uninstalled":       true,
}

var (
	_ channels.TokenGranter  = (*Channel)(nil)
	_ channels.RotatingGrant = (*grant)(nil)
)

// grantJSON is a rotating refresh-token grant in an account's
// credentials.
type grantJSON struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	RefreshToken string `json:"refresh_token"`
	BotToken     string `json:"bot_token"`
}

func (g *grantJSON) present() bool {
	return g.ClientID != "" || g.ClientSecret != "" || g.RefreshToken != ""
}

// Grant reads the account's rotating refresh-token grant from its
// credentials (client_id, client_secret, refresh_token): nil when they
// hold none (a bot_token that never expires). MIO exchanges it at
// {api base}/oauth.v2.access and keeps each refresh token Slack rotates
// in.
func (c *Channel) Grant(acct channels.Account) (channels.Grant, error) {
	var g grantJSON
	if err := channels.DecodeObject("slack credentials", acct.Credentials, &g); err != nil {
		return nil, err
	}
	if !g.present() {
		return nil, nil
	}
	if g.BotToken != "" {
		return nil, invalidf("credentials: give either bot_token (never expires) or a refresh-token grant (token rotation), not both")
	}
	for _, f := range []struct{ name, value string }{{"client_id", g.ClientID}, {"client_secret", g.ClientSecret},
		{"refresh_token", g.RefreshToken}} {
		if f.value == "" {
			return nil, invalidf("credentials %s is required with a refresh-token grant (client_id, client_secret, refresh_token)", f.name)
		}
		if channels.HasSpaceOrControl(f.value) {
			return nil, invalidf("credentials %s contains whitespace or control characters", f.name)
		}
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, err
	}
	return &grant{tokenURL: base + "/oauth.v2.access", client: c.client, clientID: g.ClientID,
		clientSecret: g.ClientSecret, refreshToken: g.RefreshToken}, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: slack: "+format, append([]any{channels.ErrInvalidConfig}, args...)...)
}

// grant exchanges a refresh token at oauth.v2.access.
type grant struct {
	tokenURL               string
	client                 *http.Client
	clientID, clientSecret string
	refreshToken           string
}

func (g *grant) Kind() string { return GrantKind }

// WithRefreshToken returns g with the refresh token Slack last issued.
func (g *grant) WithRefreshToken(refreshToken string) channels.Grant {
	c := *g
	c.refreshToken = refreshToken
	return &c
}

// Exchange posts grant_type=refresh_token to oauth.v2.access, the client
// authenticated with HTTP Basic as Slack advises. ok:false with a refusal
// code is a *channels.GrantRefusedError; 429 and ratelimited are rate
// limited; 5xx, network failures and other codes are transient.
func (g *grant) Exchange(ctx context.Context) (*channels.AccessToken, error) {
	a, err := postOAuth(ctx, g.client, g.tokenURL, g.clientID, g.clientSecret,
		url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.refreshToken}})
	if err != nil {
		var coded *oauthError
		if errors.As(err, &coded) && refusals[coded.code] {
			return nil, &channels.GrantRefusedError{Kind: GrantKind, Reason: coded.code}
		}
		return nil, err
	}
	if a.RefreshToken == "" || channels.HasSpaceOrControl(a.RefreshToken) {
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: the answer holds no usable refresh_token", opToken)}
	}
	lifetime := DefaultTokenLifetime
	if a.ExpiresIn > 0 {
		lifetime = time.Duration(a.ExpiresIn) * time.Second
	}
	return &channels.AccessToken{Token: a.AccessToken, Lifetime: lifetime, RefreshToken: a.RefreshToken}, nil
}

// oauthAnswer is oauth.v2.access's answer.
type oauthAnswer struct {
	OK           bool   `json:"ok"`
	Error        string `json:"error"`
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	AppID        string `json:"app_id"`
	BotUserID    string `json:"bot_user_id"`
	Team         struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"team"`
	Enterprise *struct {
		ID string `json:"id"`
	} `json:"enterprise"`
}

// oauthError is an oauth.v2.access answer with ok:false.
type oauthError struct{ code string }

func (e *oauthError) Error() string { return opToken + ": " + e.code }

// postOAuth calls oauth.v2.access with form and classifies the answer: an
// ok:false answer is a *channels.PermanentError wrapping an *oauthError
// (a *channels.TransientError for Slack's own failures), 429 is rate
// limited, 5xx transient. The answer's body never reaches an error.
func postOAuth(ctx context.Context, client *http.Client, tokenURL, clientID, clientSecret string, form url.Values) (*oauthAnswer, error) {
	basic := "Basic " + basicAuth(clientID, clientSecret)
	resp, err := channels.CallAPI(ctx, client, channels.APIRequest{
		Op: opToken, URL: tokenURL, Body: []byte(form.Encode()), MaxAnswer: 64 << 10,
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Authorization": {basic}},
	})
	if err != nil {
		return nil, err
	}
	switch {
	case resp.Status == http.StatusTooManyRequests:
		return nil, rateLimited(resp.Header, fmt.Errorf("%s: HTTP 429", opToken))
	case resp.Status >= 500:
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d", opToken, resp.Status)}
	}
	var a oauthAnswer
	if err := json.Unmarshal(resp.Body, &a); err != nil {
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d, malformed answer", opToken, resp.Status)}
	}
	if !a.OK {
		code := boundCode(a.Error)
		switch {
		case rateLimitedCodes[code]:
			return nil, rateLimited(resp.Header, &oauthError{code: code})
		case transientCodes[code]:
			return nil, &channels.TransientError{Err: &oauthError{code: code}}
		}
		return nil, &channels.PermanentError{Err: &oauthError{code: code}}
	}
	if a.AccessToken == "" || channels.HasSpaceOrControl(a.AccessToken) {
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: the answer holds no usable access_token", opToken)}
	}
	return &a, nil
}

// boundCode keeps an error code short and printable: it reaches logs and
// the account's disabled_reason.
func boundCode(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if s == "" {
		return "unknown_error"
	}
	return s[:min(len(s), 64)]
}

// staticTokens is the TokenSource of an account with a bot_token: never
// renewed.
type staticTokens string

func (s staticTokens) Token(context.Context) (string, error) { return string(s), nil }

func (s staticTokens) Renew(context.Context, string) (string, error) {
	return "", channels.Permanent("slack: send", channels.ErrStaticTokenRefused)
}

// basicAuth is the HTTP Basic credentials of the app's client.
func basicAuth(clientID, clientSecret string) string {
	return base64.StdEncoding.EncodeToString([]byte(clientID + ":" + clientSecret))
}
