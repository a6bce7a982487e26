package accounts_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/db"
)

// setupSlackRotation is a bundle with one Slack account holding a
// rotating refresh-token grant of fake, whose tokens live lifetime on
// the bundle's clock.
func setupSlackRotation(t *testing.T, lifetime time.Duration) (*testBundle, *channelstest.FakeSlack, uuid.UUID) {
	t.Helper()
	b := setup(t)
	b.registry = builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	b.resolver = b.newResolver(b.box)
	fake := channelstest.NewFakeSlack(t, true, lifetime, b.clock.Now)
	// The install: the code exchanged for the first refresh token.
	g, ok := b.registry.Get("slack")
	require.True(t, ok)
	settings := `{"api_base_url":"` + fake.URL + `"}`
	installed, ierr := g.(channels.Installer).CompleteInstall(context.Background(),
		channels.InstallApp{Credentials: fake.AppCredentials(), Settings: json.RawMessage(settings)},
		"https://mio.example/install/slack/callback", map[string][]string{"code": {fake.Code}})
	require.NoError(t, ierr)
	id := b.create(t, accountOpts{channel: "slack", settings: string(installed.Settings),
		credentials: string(installed.Credentials), secret: "signing-secret"})
	return b, fake, id
}

func sendSlack(t *testing.T, r *accounts.Resolver, tenant, id uuid.UUID) error {
	t.Helper()
	a, err := r.Outbound(context.Background(), tenant, id)
	require.NoError(t, err)
	if a.Status != db.AccountActive {
		return errors.New("account is " + a.Status)
	}
	_, err = a.Outbound.Send(context.Background(), &channels.OutboundMessage{ConversationID: "C1", Text: "hi"})
	return err
}

// TestSlackRotatingTokensAcrossReplicas: Slack revokes a refresh token
// when it issues the next one. Two replicas sending through an hour of
// one-minute tokens never send an expired token, never present a spent
// refresh token, and renew once per 80 % of the lifetime in total; the
// renewal is described as MIO's.
func TestSlackRotatingTokensAcrossReplicas(t *testing.T) {
	t.Parallel()
	b, fake, id := setupSlackRotation(t, time.Minute)
	replicas := []*accounts.Resolver{b.resolver, b.newResolver(b.box)}
	for i := range 360 {
		b.clock.Add(10 * time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for j := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- sendSlack(t, replicas[(i+j)%2], b.tenant, id)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "send %d", i)
		}
	}
	require.Zero(t, fake.Reused(), "a spent refresh token was presented")
	require.Zero(t, fake.Refused(), "a send went with an expired token")
	require.Equal(t, 4*360, fake.Sent())
	// One code exchange, then a renewal every 48 s over an hour.
	require.InDelta(t, 1+3600/48, fake.TokenRequests(), 3)
	acct, err := b.resolver.Outbound(context.Background(), b.tenant, id)
	require.NoError(t, err)
	require.Equal(t, db.AccountActive, acct.Status)
}

// TestSlackRotatedRefreshTokenSurvivesRestart: a process started after
// renewals (a new resolver, no memory) renews with the refresh token
// stored last, not the spent one of the credentials.
func TestSlackRotatedRefreshTokenSurvivesRestart(t *testing.T) {
	t.Parallel()
	b, fake, id := setupSlackRotation(t, time.Minute)
	for range 3 {
		require.NoError(t, sendSlack(t, b.resolver, b.tenant, id))
		b.clock.Add(time.Minute)
	}
	restarted := b.newResolver(b.box)
	require.NoError(t, sendSlack(t, restarted, b.tenant, id))
	require.Zero(t, fake.Reused())
	require.Equal(t, 4, fake.Sent())
}

// TestSlackStaticBotTokenUnchanged: an install without token rotation
// keeps a bot_token, which is sent as it is and never renewed.
func TestSlackStaticBotTokenUnchanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.registry = builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	b.resolver = b.newResolver(b.box)
	fake := channelstest.NewFakeSlack(t, false, 0, b.clock.Now)
	ch, _ := b.registry.Get("slack")
	settings := `{"api_base_url":"` + fake.URL + `"}`
	installed, err := ch.(channels.Installer).CompleteInstall(context.Background(),
		channels.InstallApp{Credentials: fake.AppCredentials(), Settings: json.RawMessage(settings)},
		"https://mio.example/install/slack/callback", map[string][]string{"code": {fake.Code}})
	require.NoError(t, err)
	require.JSONEq(t, `{"bot_token":"xoxb-static-1"}`, string(installed.Credentials))
	id := b.create(t, accountOpts{channel: "slack", settings: string(installed.Settings),
		credentials: string(installed.Credentials), secret: "signing-secret"})
	for range 3 {
		require.NoError(t, sendSlack(t, b.resolver, b.tenant, id))
		b.clock.Add(24 * time.Hour)
	}
	require.Equal(t, 1, fake.TokenRequests(), "only the install's code exchange")
	require.Equal(t, 3, fake.Sent())
}
