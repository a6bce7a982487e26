// Package installtest is the setup the tests of the surfaces that start
// one-click installs share (the admin API, the console): a database with
// one tenant, the admin and install services on a registry that lets
// adapters call 127.0.0.1, and a fake Slack app to install. It is imported
// by tests only.
package installtest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/install"
	"github.com/miohq/mio/secretbox"
)

// PublicURL is the public URL the services are given: installs redirect
// to PublicURL + "/install/{channel}/callback".
const PublicURL = "https://mio.example"

// Bundle is one test's install setup.
type Bundle struct {
	Env      *dbtest.Env
	Registry *channels.Registry
	Admin    *admin.Service
	Installs *install.Service
	// Tenant is the tenant the test installs into.
	Tenant uuid.UUID
	// Slack is the app installed: its token endpoint exchanges Slack.Code.
	Slack *channelstest.FakeSlack
}

// New sets up a fresh database with a tenant named tenantName, the
// services under a random master key, and a fake Slack without token
// rotation.
func New(t *testing.T, tenantName string) *Bundle {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	b := &Bundle{Env: dbtest.New(t),
		Registry: builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})}
	b.Admin = admin.New(b.Env.Pool, box, PublicURL).WithRegistry(b.Registry)
	b.Installs = install.New(b.Env.Pool, install.Config{Box: box, Registry: b.Registry, PublicURL: PublicURL})
	tenant, _, err := b.Admin.TenantCreate(context.Background(), tenantName)
	require.NoError(t, err)
	b.Tenant = tenant.ID
	b.Slack = channelstest.NewFakeSlack(t, false, 0, nil)
	return b
}

// SlackSettings are the install's account settings: Slack's API at the
// fake.
func (b *Bundle) SlackSettings() json.RawMessage {
	s, _ := json.Marshal(map[string]string{"api_base_url": b.Slack.URL})
	return s
}

// Consent parses the platform's consent page URL an install began with
// (an authorize_url, a redirect's Location).
func Consent(t *testing.T, authorizeURL string) *url.URL {
	t.Helper()
	u, err := url.Parse(authorizeURL)
	require.NoError(t, err)
	return u
}

// State is the install's state in its consent page URL, as the platform
// hands it back to the callback.
func State(t *testing.T, authorizeURL string) string {
	t.Helper()
	return Consent(t, authorizeURL).Query().Get("state")
}
