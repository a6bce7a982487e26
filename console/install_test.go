package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/console"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/install/installtest"
)

// TestConsoleInstallWithPlatform: the wizard's second step offers
// "Install with Slack" (not for a channel without one-click installs);
// the form sends the browser to Slack's consent page, and the platform's
// redirect creates the account and returns to the console's account list.
func TestConsoleInstallWithPlatform(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := installtest.New(t, "console")
	con, err := console.New(console.Deps{Pool: in.Env.Pool, Admin: in.Admin, Registry: in.Registry, Installs: in.Installs})
	require.NoError(t, err)
	srv := httptest.NewServer(con.Handler())
	t.Cleanup(srv.Close)
	tenant := in.Tenant
	b := &testBundle{env: in.Env, svc: in.Admin, srv: srv, tenant: tenant}

	c := b.client(t)
	_, csrf := b.login(t, c, b.token(t, db.AdminRoleCredentialAdmin))
	_, page := b.get(t, c, "/accounts/new?tenant_id="+tenant.String()+"&channel=telegram")
	require.NotContains(t, page, "Install with")
	_, page = b.get(t, c, "/accounts/new?tenant_id="+tenant.String()+"&channel=slack")
	require.Contains(t, page, "Install with Slack")

	resp, err := c.PostForm(srv.URL+"/accounts/install", url.Values{"csrf": {csrf}, "tenant_id": {tenant.String()},
		"channel_type": {"slack"}, "display_name": {"Acme"}, "app_credentials": {string(in.Slack.AppCredentials())},
		"install_settings": {string(in.SlackSettings())}, "webhook_secret": {"signing-secret"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	consent := installtest.Consent(t, resp.Header.Get("Location"))
	require.Equal(t, "slack.com", consent.Host)
	require.Equal(t, installtest.PublicURL+"/install/slack/callback", consent.Query().Get("redirect_uri"))

	// Slack redirects the browser to the public callback.
	res, err := in.Installs.Complete(ctx, "slack", url.Values{"code": {in.Slack.Code}, "state": {consent.Query().Get("state")}})
	require.NoError(t, err)
	require.Equal(t, srv.URL+"/accounts?tenant_id="+tenant.String(), res.ReturnURL)
	_, page = b.get(t, c, "/accounts?tenant_id="+tenant.String())
	require.Contains(t, page, res.AccountID.String())
	require.True(t, strings.Contains(page, "Acme"), page)

	// Bad app credentials: the wizard says so; nothing is pending.
	resp, err = c.PostForm(srv.URL+"/accounts/install", url.Values{"csrf": {csrf}, "tenant_id": {tenant.String()},
		"channel_type": {"slack"}, "app_credentials": {`{"client_id":"x"}`}, "webhook_secret": {"s"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
