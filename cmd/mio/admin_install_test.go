package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/install"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/secretbox"
)

// TestAdminAccountInstall: mio admin account install prints the
// platform's consent page, whose redirect to the public listener's
// callback (a server with the same master key) creates the account that
// mio admin account list then shows; the app's secret is never printed.
func TestAdminAccountInstall(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	base := []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
		"MIO_API_ALLOW_HTTP_HOSTS=127.0.0.1"}
	r := runMio(t, base, "admin", "tenant", "create", "--name", "install")
	require.Zero(t, r.code, r.stderr)
	var tenant struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tenant))

	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	dir := t.TempDir()
	creds, settings := filepath.Join(dir, "app.json"), filepath.Join(dir, "settings.json")
	require.NoError(t, os.WriteFile(creds, fake.AppCredentials(), 0o600))
	require.NoError(t, os.WriteFile(settings, []byte(`{"api_base_url":"`+fake.URL+`","scopes":"chat:write"}`), 0o600))
	r = runMio(t, append(base, "SIGNING=slack-signing-secret"), "admin", "account", "install", "--tenant", tenant.ID,
		"--channel", "slack", "--name", "Acme", "--credentials-file", creds, "--settings-file", settings,
		"--webhook-secret-env", "SIGNING", "--public-url", "https://mio.example")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stdout, fake.ClientSecret)
	var begun struct {
		AuthorizeURL string `json:"authorize_url"`
		RedirectURI  string `json:"redirect_uri"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &begun), r.stdout)
	require.Equal(t, "https://mio.example/install/slack/callback", begun.RedirectURI)
	authURL, err := url.Parse(begun.AuthorizeURL)
	require.NoError(t, err)
	require.Equal(t, "chat:write", authURL.Query().Get("scope"))

	box, err := secretbox.New(key)
	require.NoError(t, err)
	registry := builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	api := httpapi.New(httpapi.Deps{Pool: env.Pool, Metrics: metrics.New(), Registry: registry,
		Installs: install.New(env.Pool, install.Config{Box: box, Registry: registry, PublicURL: "https://mio.example"})})
	pub := httptest.NewServer(api.PublicHandler())
	t.Cleanup(pub.Close)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, pub.URL+"/install/slack/callback?"+
		url.Values{"code": {fake.Code}, "state": {authURL.Query().Get("state")}}.Encode(), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	r = runMio(t, base, "admin", "account", "list", "--tenant", tenant.ID)
	require.Zero(t, r.code, r.stderr)
	var list struct {
		Items []struct {
			DisplayName    string `json:"display_name"`
			ExternalID     string `json:"external_id"`
			HasCredentials bool   `json:"has_credentials"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list), r.stdout)
	require.Len(t, list.Items, 1)
	require.Equal(t, "Acme", list.Items[0].DisplayName)
	require.Equal(t, fake.TeamID, list.Items[0].ExternalID)
	require.True(t, list.Items[0].HasCredentials)

	r = runMio(t, base, "admin", "account", "install", "--tenant", tenant.ID, "--channel", "telegram",
		"--credentials-file", creds, "--public-url", "https://mio.example")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "no one-click install")
}
