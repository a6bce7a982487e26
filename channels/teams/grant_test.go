package teams

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func TestGrantExchange(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, 90*time.Second)
	ch := newTestChannel()
	g, err := ch.Grant(fakeAccount(fake))
	require.NoError(t, err)
	require.Equal(t, GrantKind, g.Kind())
	at, err := g.Exchange(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, at.Token)
	require.Equal(t, 90*time.Second, at.Lifetime)

	fake.Revoke()
	_, err = g.Exchange(context.Background())
	var refused *channels.GrantRefusedError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, "invalid_client", refused.Reason)
	require.NotContains(t, err.Error(), fake.ClientSecret)

	none, err := ch.Grant(channels.Account{Credentials: []byte(`{"app_id":"a"}`)})
	require.NoError(t, err)
	require.Nil(t, none, "no client secret: an account that only receives")
}

func TestGrantRequestAndAnswers(t *testing.T) {
	t.Parallel()
	var form url.Values
	var path string
	answer := channelstest.Answer(http.StatusOK, `{"token_type":"Bearer","expires_in":3599,"access_token":"eyJ.x"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		form, path = r.PostForm, r.URL.Path
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	ch := newTestChannel()
	g, err := ch.Grant(channels.Account{Settings: []byte(`{"token_url":"` + srv.URL + `/contoso/oauth2/v2.0/token"}`),
		Credentials: []byte(`{"app_id":"app-1","client_secret":"s3cret","tenant_id":"contoso"}`)})
	require.NoError(t, err)
	at, err := g.Exchange(context.Background())
	require.NoError(t, err)
	require.Equal(t, &channels.AccessToken{Token: "eyJ.x", Lifetime: 3599 * time.Second}, at)
	require.Equal(t, "/contoso/oauth2/v2.0/token", path)
	require.Equal(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {"app-1"}, "client_secret": {"s3cret"},
		"scope": {TokenScope}}, form)

	for _, tc := range []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request)
		kind   string
	}{
		{"secret expired", channelstest.Answer(http.StatusUnauthorized, `{"error":"invalid_client","error_description":"AADSTS7000222"}`), "refused"},
		{"unknown tenant", channelstest.Answer(http.StatusBadRequest, `{"error":"invalid_request","error_description":"AADSTS90002"}`), "refused"},
		{"throttled", channelstest.Answer(http.StatusTooManyRequests, ``, "Retry-After", "7"), "rate_limited"},
		{"unavailable", channelstest.Answer(http.StatusServiceUnavailable, `{"error":"temporarily_unavailable"}`), "transient"},
		{"no token", channelstest.Answer(http.StatusOK, `{}`), "transient"},
		{"not json", channelstest.Answer(http.StatusOK, `<html>`), "transient"},
	} {
		answer = tc.answer
		_, err := g.Exchange(context.Background())
		var refused *channels.GrantRefusedError
		kind := channelstest.ErrorKind(err)
		if errors.As(err, &refused) {
			kind = "refused"
		}
		require.Equal(t, tc.kind, kind, "%s: %v", tc.name, err)
	}
}
