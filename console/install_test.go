package console_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/console"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/install"
	"github.com/miohq/mio/secretbox"
)

// TestConsoleInstallWithPlatform: the wizard's second step offers
// "Install with Slack" (not for a channel without one-click installs);
// the form sends the browser to Slack's consent page, and the platform's
// redirect creates the account and returns to the console's account list.
func TestConsoleInstallWithPlatform(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	registry := builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	svc := admin.New(env.Pool, box, "https://mio.example").WithRegistry(registry)
	installs := install.New(env.Pool, install.Config{Box: box, Registry: registry, PublicURL: "https://mio.example"})
	con, err := console.New(console.Deps{Pool: env.Pool, Admin: svc, Registry: registry, Installs: installs})
	require.NoError(t, err)
	srv := httptest.NewServer(con.Handler())
	t.Cleanup(srv.Close)
	tenant, _, err := svc.TenantCreate(ctx, "console")
	require.NoError(t, err)
	b := &testBundle{env: env, svc: svc, srv: srv, tenant: tenant.ID}

	c := b.client(t)
	_, csrf := b.login(t, c, b.token(t, db.AdminRoleCredentialAdmin))
	_, page := b.get(t, c, "/accounts/new?tenant_id="+tenant.ID.String()+"&channel=telegram")
	require.NotContains(t, page, "Install with")
	_, page = b.get(t, c, "/accounts/new?tenant_id="+tenant.ID.String()+"&channel=slack")
	require.Contains(t, page, "Install with Slack")

	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	resp, err := c.PostForm(srv.URL+"/accounts/install", url.Values{"csrf": {csrf}, "tenant_id": {tenant.ID.String()},
		"channel_type": {"slack"}, "display_name": {"Acme"}, "app_credentials": {string(fake.AppCredentials())},
		"install_settings": {`{"api_base_url":"` + fake.URL + `"}`}, "webhook_secret": {"signing-secret"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	consent, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "slack.com", consent.Host)
	require.Equal(t, "https://mio.example/install/slack/callback", consent.Query().Get("redirect_uri"))

	// Slack redirects the browser to the public callback.
	res, err := installs.Complete(ctx, "slack", url.Values{"code": {fake.Code}, "state": {consent.Query().Get("state")}})
	require.NoError(t, err)
	require.Equal(t, srv.URL+"/accounts?tenant_id="+tenant.ID.String(), res.ReturnURL)
	_, page = b.get(t, c, "/accounts?tenant_id="+tenant.ID.String())
	require.Contains(t, page, res.AccountID.String())
	require.True(t, strings.Contains(page, "Acme"), page)

	// Bad app credentials: the wizard says so; nothing is pending.
	resp, err = c.PostForm(srv.URL+"/accounts/install", url.Values{"csrf": {csrf}, "tenant_id": {tenant.ID.String()},
		"channel_type": {"slack"}, "app_credentials": {`{"client_id":"x"}`}, "webhook_secret": {"s"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
