package teams

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// Client-credentials grant.
const (
	// GrantKind names the grant in reasons and logs.
	GrantKind = "teams client credentials"
	// DefaultTokenLifetime is assumed when the answer has no expires_in:
	// Microsoft identity platform tokens live about an hour.
	DefaultTokenLifetime = time.Hour
	// opToken prefixes every token request error.
	opToken = "teams: client credentials token"
)

// refusals are the OAuth error codes with which Microsoft's identity
// platform refuses the app's credentials for good: an unknown or deleted
// app, a wrong or expired client secret (invalid_client, AADSTS7000215 /
// 7000222), an app not allowed in the tenant. Other errors are retried.
var refusals = map[string]bool{
	"invalid_client":      true,
	"unauthorized_client": true,
	"invalid_grant":       true,
	"invalid_scope":       true,
	"invalid_request":     true,
}

var _ channels.TokenGranter = (*Channel)(nil)

// Grant reads the client-credentials grant (app_id and client_secret,
// posted to the account's token URL for TokenScope): nil when the
// credentials have no client_secret (an account that only receives).
func (c *Channel) Grant(acct channels.Account) (channels.Grant, error) {
	cfg, err := c.ParseConfig(acct)
	if err != nil {
		return nil, err
	}
	if cfg.ClientSecret == "" {
		return nil, nil
	}
	return &grant{tokenURL: cfg.TokenURL, client: c.opts.HTTPClient,
		form: url.Values{"grant_type": {"client_credentials"}, "client_id": {cfg.AppID},
			"client_secret": {cfg.ClientSecret}, "scope": {TokenScope}}}, nil
}

// grant obtains Bot Connector tokens with the app's client secret.
type grant struct {
	tokenURL string
	client   *http.Client
	form     url.Values
}

func (g *grant) Kind() string { return GrantKind }

// tokenAnswer is the identity platform's answer to a token request.
type tokenAnswer struct {
	AccessToken string      `json:"access_token"`
	ExpiresIn   json.Number `json:"expires_in"`
	Error       string      `json:"error"`
}

// Exchange posts grant_type=client_credentials (form encoded) to the token
// URL. An OAuth error naming a refusal (invalid_client, …) is a
// *channels.GrantRefusedError; 429 is rate limited; 5xx, network
// failures and anything else are transient. The answer's body never
// reaches an error (it may hold a token).
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
	code := boundText(a.Error)
	switch {
	case resp.Status == http.StatusTooManyRequests:
		wait := channels.RetryAfter(resp.Header, time.Now(), time.Minute)
		return nil, &channels.RateLimitedError{RetryAfter: wait, Err: fmt.Errorf("%s: HTTP 429", opToken)}
	case resp.Status >= 500:
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d", opToken, resp.Status)}
	case code != "" && refusals[strings.ToLower(code)]:
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
