package googlechat

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

// TestGrantExchange: the assertion the fake token endpoint checks (signed
// by the key, issuer the client email, audience the token URL, scope
// chat.bot, an hour at most) gives a token living expires_in.
func TestGrantExchange(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, 2*time.Second)
	g, err := testChannel().Grant(channels.Account{ExternalID: testProject, Settings: f.Settings("", ""), Credentials: f.Credentials()})
	require.NoError(t, err)
	require.Equal(t, GrantKind, g.Kind())
	tok, err := g.Exchange(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, tok.Token)
	require.Equal(t, 2*time.Second, tok.Lifetime)
	require.Equal(t, 1, f.TokenRequests())

	f.Revoke()
	_, err = g.Exchange(context.Background())
	var refused *channels.GrantRefusedError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, "google service-account key refused: invalid_grant", refused.Error())
}

// TestGrantAssertion: the claims and header of the signed assertion.
func TestGrantAssertion(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	ch := New(Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}, Now: func() time.Time { return now }})
	g, err := ch.Grant(channels.Account{ExternalID: testProject, Credentials: f.Credentials()})
	require.NoError(t, err)
	a, err := g.(*grant).assertion()
	require.NoError(t, err)
	var claims jwt.MapClaims
	tok, _, err := jwt.NewParser().ParseUnverified(a, &claims)
	require.NoError(t, err)
	require.Equal(t, "RS256", tok.Method.Alg())
	require.Equal(t, f.KeyID, tok.Header["kid"])
	require.Equal(t, jwt.MapClaims{"iss": f.ClientEmail, "scope": Scope, "aud": f.URL + "/token",
		"iat": float64(now.Unix()), "exp": float64(now.Add(time.Hour).Unix())}, claims,
		"without a token_url setting the key's token_uri is the audience")
}

// TestGrantAnswers: how the token endpoint's answers are classified.
func TestGrantAnswers(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		header []string
		want   string
	}{
		{"revoked key", 400, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`, nil, "refused"},
		{"deleted account", 401, `{"error":"invalid_client","error_description":"The OAuth client was not found."}`, nil, "refused"},
		{"clock skew", 400, `{"error":"invalid_grant","error_description":"Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."}`, nil, "transient"},
		{"other error", 400, `{"error":"invalid_scope"}`, nil, "transient"},
		{"rate limited", 429, `{}`, []string{"Retry-After", "3"}, "rate_limited"},
		{"server error", 503, `<html>`, nil, "transient"},
		{"no token", 200, `{"expires_in":3599}`, nil, "transient"},
		{"not JSON", 200, `<html>`, nil, "transient"},
		{"token with a space", 200, `{"access_token":"a b"}`, nil, "transient"},
		{"ok, default lifetime", 200, `{"access_token":"ya29.x"}`, nil, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(channelstest.Answer(tc.status, tc.body, tc.header...)))
			t.Cleanup(srv.Close)
			g, err := testChannel().Grant(channels.Account{ExternalID: testProject, Credentials: f.Credentials(),
				Settings: []byte(`{"token_url":"` + srv.URL + `"}`)})
			require.NoError(t, err)
			tok, err := g.Exchange(context.Background())
			var refused *channels.GrantRefusedError
			if tc.want == "refused" {
				require.ErrorAs(t, err, &refused)
				return
			}
			require.False(t, errorsAs(err, &refused), "%v", err)
			require.Equal(t, tc.want, channelstest.ErrorKind(err), "%v", err)
			if err == nil {
				require.Equal(t, DefaultTokenLifetime, tok.Lifetime)
			} else {
				require.NotContains(t, err.Error(), "ya29")
			}
		})
	}
}

// TestGrantRefusesHTTPTokenURI: the key's token_uri is held to the same
// policy as settings URLs.
func TestGrantRefusesHTTPTokenURI(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	_, err := New(Options{}).Grant(channels.Account{ExternalID: testProject, Credentials: f.Credentials()})
	require.ErrorIs(t, err, channels.ErrInvalidConfig)
}
