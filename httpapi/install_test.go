package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/install/installtest"
	"github.com/miohq/mio/metrics"
)

// TestInstallRoutes: a credential-admin begins a Slack install on the
// admin listener (an operator may not: the app's secret is sealed and
// an account with secrets created); the platform's redirect to the public
// callback, without a bearer token, creates the account; the same
// redirect again, or one with a forged state, is 400 and reaches no
// token endpoint; with a return URL, success redirects there.
func TestInstallRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := installtest.New(t, "t")
	svc, fake := in.Admin, in.Slack
	api := httpapi.New(httpapi.Deps{Pool: in.Env.Pool, Metrics: metrics.New(), Registry: in.Registry, Admin: svc, Installs: in.Installs})
	adm := httptest.NewServer(openapitest.Handler(t, openapi.Admin, api.AdminHandler()))
	t.Cleanup(adm.Close)
	pub := httptest.NewServer(openapitest.Handler(t, openapi.Public, api.PublicHandler()))
	t.Cleanup(pub.Close)
	a := &adminAPI{adm: adm, testBundle: &testBundle{env: in.Env}}

	body := func(returnURL string) string {
		b, _ := json.Marshal(map[string]any{"tenant_id": in.Tenant, "channel_type": "slack", "display_name": "Acme",
			"credentials": json.RawMessage(fake.AppCredentials()), "settings": in.SlackSettings(),
			"webhook_secret": "signing-secret", "return_url": returnURL})
		return string(b)
	}
	status, _ := a.call(t, "POST", "/admin/v1/installs", a.token(t, db.AdminRoleOperator), body(""))
	require.Equal(t, http.StatusForbidden, status)
	cred := a.token(t, db.AdminRoleCredentialAdmin)
	status, begun := a.call(t, "POST", "/admin/v1/installs", cred, body(""))
	require.Equal(t, http.StatusCreated, status, begun)
	require.Equal(t, installtest.PublicURL+"/install/slack/callback", begun["redirect_uri"])
	state := installtest.State(t, begun["authorize_url"].(string))

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	callback := func(code, state string) (*http.Response, string) {
		resp, err := noRedirect.Get(pub.URL + "/install/slack/callback?" + url.Values{"code": {code}, "state": {state}}.Encode())
		require.NoError(t, err)
		return resp, readAll(t, resp)
	}
	resp, page := callback(fake.Code, state)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "Acme")
	accts, err := svc.AccountList(ctx, in.Tenant)
	require.NoError(t, err)
	require.Len(t, accts, 1)
	require.Equal(t, fake.TeamID, accts[0].ExternalID)

	resp, page = callback("slack-code", state)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, page)
	forged := state[:len(state)-2] + "AA"
	resp, _ = callback("slack-code", forged)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, 1, fake.TokenRequests(), "no exchange for a replayed or forged state")

	// With a return URL: a 303 there, naming the account.
	fake.Code = "slack-code-2"
	status, begun = a.call(t, "POST", "/admin/v1/installs", cred, body("https://console.example/accounts"))
	require.Equal(t, http.StatusCreated, status)
	resp, _ = callback("slack-code-2", installtest.State(t, begun["authorize_url"].(string)))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "https://console.example/accounts?account_id="+accts[0].ID.String()),
		resp.Header.Get("Location"))
}
