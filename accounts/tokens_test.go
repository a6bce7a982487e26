package accounts_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/db"
)

// cliqBundle is a bundle whose registry lets a Zoho Cliq account's
// accounts_server and api_base_url name a local fake, with one account
// holding the fake's refresh-token grant.
type cliqBundle struct {
	*testBundle
	zoho    *channelstest.FakeZoho
	account uuid.UUID
}

func setupCliq(t *testing.T, lifetime time.Duration) *cliqBundle {
	t.Helper()
	b := setup(t)
	b.registry = builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	b.resolver = b.newResolver(b.box)
	z := channelstest.NewFakeZoho(t, lifetime)
	id := b.create(t, accountOpts{channel: "zoho_cliq", settings: `{"api_base_url":"` + z.URL + `"}`,
		credentials: string(z.Credentials()), secret: "cliq-token"})
	return &cliqBundle{testBundle: b, zoho: z, account: id}
}

// send sends one message through resolver r.
func (b *cliqBundle) send(t *testing.T, r *accounts.Resolver) error {
	t.Helper()
	a, err := r.Outbound(context.Background(), b.tenant, b.account)
	require.NoError(t, err)
	if a.Status != db.AccountActive {
		return errors.New("account is " + a.Status)
	}
	_, err = a.Outbound.Send(context.Background(), &channels.OutboundMessage{ConversationID: "chat-1", Text: "hi"})
	return err
}

func (b *cliqBundle) row(t *testing.T) *db.Account {
	t.Helper()
	var row *db.Account
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		var err error
		row, err = db.AccountGet(context.Background(), tx, b.tenant, b.account)
		return err
	}))
	return row
}

// TestTokenRenewedBeforeExpiry: the first send obtains a token, later
// sends reuse it, and the first send past 80 % of its lifetime renews it
// — before it expires. The stored token is sealed.
func TestTokenRenewedBeforeExpiry(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	require.NoError(t, b.send(t, b.resolver))
	require.NoError(t, b.send(t, b.resolver))
	require.Equal(t, 1, b.zoho.TokenRequests(), "the token is reused")

	b.clock.Add(47 * time.Second)
	require.NoError(t, b.send(t, b.resolver))
	require.Equal(t, 1, b.zoho.TokenRequests(), "not renewed before 80 % of its lifetime")
	b.clock.Add(2 * time.Second)
	require.NoError(t, b.send(t, b.resolver))
	require.Equal(t, 2, b.zoho.TokenRequests(), "renewed at 80 % of its lifetime")
	require.Equal(t, 4, b.zoho.Sent())
	require.Zero(t, b.zoho.Refused(), "no send went with an expired token")

	var stored *db.AccessToken
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		var err error
		stored, err = db.AccessTokenGet(context.Background(), tx, b.tenant, b.account)
		return err
	}))
	require.False(t, bytes.Contains(stored.TokenEnc, []byte("1000.access")), "sealed at rest")
	require.Equal(t, b.clock.Now().Add(48*time.Second), stored.RenewAt.UTC())
	require.Equal(t, "zoho refresh token: renewed by MIO", accounts.Renewal(b.box, b.registry, b.row(t)))
}

// TestTokenSharedAcrossProcesses: a second process (its own resolver)
// takes the token the first one stored instead of asking Zoho again.
func TestTokenSharedAcrossProcesses(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	other := b.newResolver(b.box)
	require.NoError(t, b.send(t, b.resolver))
	require.NoError(t, b.send(t, other))
	require.Equal(t, 1, b.zoho.TokenRequests())
	b.clock.Add(50 * time.Second)
	require.NoError(t, b.send(t, b.resolver))
	require.NoError(t, b.send(t, other))
	require.Equal(t, 2, b.zoho.TokenRequests(), "one renewal for both processes")
}

// TestConcurrentRenewalsOneRequest: sends racing for an account's first
// token, in one process and in two, make one token request.
func TestConcurrentRenewalsOneRequest(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	b.zoho.OnToken(func() { time.Sleep(100 * time.Millisecond) }) // a slow accounts server
	resolvers := []*accounts.Resolver{b.resolver, b.newResolver(b.box)}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := resolvers[i%2].Outbound(context.Background(), b.tenant, b.account)
			if err == nil {
				_, err = a.Outbound.Send(context.Background(), &channels.OutboundMessage{ConversationID: "c", Text: "hi"})
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, b.zoho.TokenRequests())
	require.Equal(t, 40, b.zoho.Sent())
}

// TestTokenGrantRefusedDisablesAccount: Zoho answering a token request
// 200 {"error":"invalid_code"} (a revoked refresh token) disables the
// account with the reason; the send fails permanently, and Zoho is not
// asked again. Enabling the account clears the reason.
func TestTokenGrantRefusedDisablesAccount(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	// Another process, whose clock stays: its cache holds the account as
	// active throughout.
	other := accounts.NewResolver(b.env.Pool, accounts.ResolverConfig{Box: b.box, Registry: b.registry,
		Now: (&clock{now: b.clock.Now()}).Now})
	require.NoError(t, b.send(t, b.resolver))
	require.NoError(t, b.send(t, other))
	b.zoho.Revoke()
	b.clock.Add(50 * time.Second)

	err := b.send(t, b.resolver)
	var perm *channels.PermanentError
	require.ErrorAs(t, err, &perm)
	var refused *channels.GrantRefusedError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, "invalid_code", refused.Reason)
	require.NotContains(t, err.Error(), b.zoho.RefreshToken)
	require.NotContains(t, err.Error(), b.zoho.ClientSecret)
	row := b.row(t)
	require.Equal(t, db.AccountDisabled, row.Status)
	require.Equal(t, "zoho refresh token refused: invalid_code", row.DisabledReason)
	require.Equal(t, 2, b.zoho.TokenRequests())

	// The resolver forgot the account: it is disabled at once.
	require.EqualError(t, b.send(t, b.resolver), "account is disabled")
	// The other process, whose token Cliq now refuses, does not ask Zoho
	// for another: it reads the reason.
	b.zoho.ExpireAll()
	err = b.send(t, other)
	require.ErrorAs(t, err, &perm)
	require.Contains(t, err.Error(), "zoho refresh token refused: invalid_code")
	require.Equal(t, 2, b.zoho.TokenRequests())

	b.setStatus(t, b.tenant, b.account, db.AccountActive)
	require.Empty(t, b.row(t).DisabledReason, "enabling clears the reason")
}

// TestTokenRefusedForgottenWhenReenabled: an account enabled again after
// a refusal asks Zoho again (the operator may have re-authorised the
// client), in the process that saw the refusal too.
func TestTokenRefusedForgottenWhenReenabled(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	b.zoho.Revoke()
	require.Error(t, b.send(t, b.resolver))
	require.Equal(t, 1, b.zoho.TokenRequests())
	b.setStatus(t, b.tenant, b.account, db.AccountActive)
	b.clock.Add(accounts.CacheTTL + time.Second)
	b.resolver.Forget(b.account)
	b.clock.Add(time.Second)
	require.Error(t, b.send(t, b.resolver))
	require.Equal(t, 2, b.zoho.TokenRequests())
}

// TestTokenRotatedCredentialsEnableAccount: new credentials enable an
// account MIO disabled for a refused grant and clear the reason; the old
// stored token is not used with them.
func TestTokenRotatedCredentialsEnableAccount(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	b.zoho.Revoke()
	require.Error(t, b.send(t, b.resolver))
	require.Equal(t, db.AccountDisabled, b.row(t).Status)

	z2 := channelstest.NewFakeZoho(t, time.Minute)
	sealed, err := accounts.Reseal(b.box, b.registry, b.row(t), accounts.Change{Credentials: z2.Credentials()})
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.AccountSetCredentials(context.Background(), tx, b.tenant, b.account, sealed.CredentialsEnc)
		return err
	}))
	row := b.row(t)
	require.Equal(t, db.AccountActive, row.Status)
	require.Empty(t, row.DisabledReason)

	// An operator's disable is not undone by new credentials.
	b.setStatus(t, b.tenant, b.account, db.AccountDisabled)
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.AccountSetCredentials(context.Background(), tx, b.tenant, b.account, sealed.CredentialsEnc)
		return err
	}))
	require.Equal(t, db.AccountDisabled, b.row(t).Status)
}

// TestTokenServerErrorRetried: a 5xx from the accounts server fails the
// send as transient and leaves the account active; the next send renews.
func TestTokenServerErrorRetried(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	b.zoho.FailNext(1)
	err := b.send(t, b.resolver)
	var tr *channels.TransientError
	require.ErrorAs(t, err, &tr)
	require.Equal(t, db.AccountActive, b.row(t).Status)
	require.Empty(t, b.row(t).DisabledReason)
	require.NoError(t, b.send(t, b.resolver))
	require.Equal(t, 2, b.zoho.TokenRequests())
}

// TestUnauthorizedRenewsOnceAndRetries: a 401 from Cliq renews the token
// once and sends again; a 401 to the renewed token is a permanent
// failure, not another renewal.
func TestUnauthorizedRenewsOnceAndRetries(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	require.NoError(t, b.send(t, b.resolver))
	b.zoho.ExpireAll() // revoked by Zoho before its time
	require.NoError(t, b.send(t, b.resolver))
	require.Equal(t, 2, b.zoho.TokenRequests())
	require.Equal(t, 1, b.zoho.Refused())
	require.Equal(t, 2, b.zoho.Sent())

	b.zoho.RefuseSends()
	err := b.send(t, b.resolver)
	var perm *channels.PermanentError
	require.ErrorAs(t, err, &perm)
	require.Contains(t, err.Error(), "HTTP 401")
	require.Equal(t, 3, b.zoho.TokenRequests(), "one forced renewal")
	require.Equal(t, 3, b.zoho.Refused())
	require.Equal(t, db.AccountActive, b.row(t).Status, "a refused send does not disable the account")
}

// TestStaticTokenNotRenewed: an account with a bare access_token sends
// with it and says it is not renewed; a 401 names that.
func TestStaticTokenNotRenewed(t *testing.T) {
	t.Parallel()
	b := setupCliq(t, time.Minute)
	id := b.create(t, accountOpts{channel: "zoho_cliq", settings: `{"api_base_url":"` + b.zoho.URL + `"}`,
		credentials: `{"access_token":"1000.static"}`, secret: "cliq-token"})
	b.account = id
	err := b.send(t, b.resolver)
	require.ErrorIs(t, err, channels.ErrStaticTokenRefused)
	require.Contains(t, err.Error(), "not renewed")
	require.Zero(t, b.zoho.TokenRequests())
	require.Equal(t, "static access token: not renewed", accounts.Renewal(b.box, b.registry, b.row(t)))
}
