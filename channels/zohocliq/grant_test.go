package zohocliq

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
)

func grantCreds(server string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"client_id": "1000.CLIENT", "client_secret": "s3cret",
		"refresh_token": "1000.refresh", "accounts_server": server})
	return b
}

// TestGrantValidation: a refresh-token grant is checked at account
// creation (ParseConfig) with a clear error per problem.
func TestGrantValidation(t *testing.T) {
	t.Parallel()
	c := New(Options{APIBasePolicy: channels.APIBasePolicy{AllowHTTP: true}})
	for name, tc := range map[string]struct {
		creds string
		want  string // "" = valid
	}{
		"Grant":             {string(grantCreds("https://accounts.zoho.eu")), ""},
		"GrantSlash":        {string(grantCreds("https://accounts.zoho.com.au/")), ""},
		"Loopback":          {string(grantCreds("http://127.0.0.1:8080")), ""},
		"Static":            {`{"access_token":"1000.x"}`, ""},
		"None":              {`{}`, ""},
		"MissingSecret":     {`{"client_id":"a","refresh_token":"r","accounts_server":"https://accounts.zoho.com"}`, "client_secret is required"},
		"MissingServer":     {`{"client_id":"a","client_secret":"s","refresh_token":"r"}`, "accounts_server is required"},
		"PlainHTTP":         {string(grantCreds("http://accounts.zoho.com")), "must be https"},
		"NotURL":            {string(grantCreds("accounts.zoho.com")), "accounts_server"},
		"Path":              {string(grantCreds("https://accounts.zoho.com/oauth/v2/token")), "without a path"},
		"Both":              {`{"access_token":"x","client_id":"a","client_secret":"s","refresh_token":"r","accounts_server":"https://accounts.zoho.com"}`, "not both"},
		"SpaceInToken":      {`{"client_id":"a","client_secret":"s","refresh_token":"r r","accounts_server":"https://accounts.zoho.com"}`, "refresh_token contains whitespace"},
		"CredentialsNotObj": {`[1]`, "credentials"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.ParseConfig(channels.Account{Credentials: json.RawMessage(tc.creds), WebhookSecret: "tok"})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, channels.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
	// Without a policy allowing http, not even loopback.
	_, err := New(Options{}).ParseConfig(channels.Account{Credentials: grantCreds("http://127.0.0.1:8080"), WebhookSecret: "tok"})
	require.ErrorContains(t, err, "must be https")
}

// TestGrantExchange: the form posted to /oauth/v2/token, and how Zoho's
// answers are classified — an error field in a 200 answer included.
func TestGrantExchange(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		status    int
		body      string
		refused   string
		transient bool
		limited   bool
		lifetime  time.Duration
	}{
		"OK":             {status: 200, body: `{"access_token":"1000.new","expires_in":3600,"api_domain":"https://www.zohoapis.com","token_type":"Bearer"}`, lifetime: time.Hour},
		"NoExpiresIn":    {status: 200, body: `{"access_token":"1000.new"}`, lifetime: DefaultTokenLifetime},
		"InvalidCode":    {status: 200, body: `{"error":"invalid_code"}`, refused: "invalid_code"},
		"InvalidClient":  {status: 200, body: `{"error":"invalid_client"}`, refused: "invalid_client"},
		"Refused400":     {status: 400, body: `{"error":"invalid_client_secret"}`, refused: "invalid_client_secret"},
		"AccessDenied":   {status: 400, body: `{"error_description":"You have made too many requests continuously.","error":"Access Denied","status":"failure"}`, transient: true},
		"Unavailable":    {status: 503, body: `oops`, transient: true},
		"NoToken":        {status: 200, body: `{}`, transient: true},
		"TooManyRequest": {status: 429, body: ``, limited: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var form url.Values
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				require.Equal(t, "/oauth/v2/token", r.URL.Path)
				require.Equal(t, "application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
				require.NoError(t, r.ParseForm())
				form = r.PostForm
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c := New(Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
			g, err := c.Grant(channels.Account{Credentials: grantCreds(srv.URL)})
			require.NoError(t, err)
			require.Equal(t, GrantKind, g.Kind())
			tok, err := g.Exchange(context.Background())
			require.Equal(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {"1000.CLIENT"},
				"client_secret": {"s3cret"}, "refresh_token": {"1000.refresh"}}, form)
			var refused *channels.GrantRefusedError
			var tr *channels.TransientError
			var rl *channels.RateLimitedError
			switch {
			case tc.refused != "":
				require.ErrorAs(t, err, &refused)
				require.Equal(t, tc.refused, refused.Reason)
				require.Equal(t, "zoho refresh token refused: "+tc.refused, err.Error())
			case tc.transient:
				require.ErrorAs(t, err, &tr)
			case tc.limited:
				require.ErrorAs(t, err, &rl)
			default:
				require.NoError(t, err)
				require.Equal(t, "1000.new", tok.Token)
				require.Equal(t, tc.lifetime, tok.Lifetime)
				return
			}
			require.NotContains(t, err.Error(), "s3cret")
			require.NotContains(t, err.Error(), "1000.refresh")
		})
	}
}

// fakeTokens is a TokenSource handing out numbered tokens.
type fakeTokens struct {
	tokens []string
	renews int
}

func (f *fakeTokens) Token(context.Context) (string, error) { return f.tokens[f.renews], nil }

func (f *fakeTokens) Renew(_ context.Context, stale string) (string, error) {
	if stale != f.tokens[f.renews] {
		panic("renewed another token than the one refused")
	}
	f.renews++
	return f.tokens[f.renews], nil
}

// TestSendRenewsOnUnauthorized: with a grant, a 401 renews the token once
// and sends again; a 401 to the renewed token is permanent. A static
// token's 401 names it.
func TestSendRenewsOnUnauthorized(t *testing.T) {
	t.Parallel()
	var auths []string
	valid := "1000.second"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auths = append(auths, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Zoho-oauthtoken "+valid {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":"oauthtoken_invalid","message":"Invalid OAuth token."}`))
			return
		}
		_, _ = w.Write([]byte(`{"message_id":"77"}`))
	}))
	defer srv.Close()
	c := New(Options{APIBaseURL: srv.URL, APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	msg := &channels.OutboundMessage{ConversationID: "chat", Text: "hi"}

	tokens := &fakeTokens{tokens: []string{"1000.first", "1000.second", "1000.third"}}
	out, err := c.NewOutbound(channels.Account{Credentials: grantCreds("https://accounts.zoho.com"), Tokens: tokens})
	require.NoError(t, err)
	res, err := out.Send(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, "77", res.ProviderMessageID)
	require.Equal(t, []string{"Zoho-oauthtoken 1000.first", "Zoho-oauthtoken 1000.second"}, auths)
	require.Equal(t, 1, tokens.renews)

	valid = "none"
	_, err = out.Send(context.Background(), msg)
	var perm *channels.PermanentError
	require.ErrorAs(t, err, &perm)
	require.ErrorContains(t, err, "HTTP 401")
	require.Equal(t, 2, tokens.renews, "one renewal per send")
	require.Len(t, auths, 4)

	_, err = c.NewOutbound(channels.Account{Credentials: grantCreds("https://accounts.zoho.com")})
	require.ErrorContains(t, err, "no token renewal is configured")

	static, err := c.NewOutbound(channels.Account{Credentials: json.RawMessage(`{"access_token":"1000.static"}`)})
	require.NoError(t, err)
	_, err = static.Send(context.Background(), msg)
	require.ErrorAs(t, err, &perm)
	require.ErrorIs(t, err, channels.ErrStaticTokenRefused)
	require.Len(t, auths, 5, "a static token is not renewed")
}
