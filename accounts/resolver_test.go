package accounts_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/db"
)

const (
	whsec    = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"
	endpoint = `{"endpoint_url":"https://agent.example.com/in"}`
	tgCreds  = `{"bot_token":"123456:test-token"}`
)

func TestInbound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	hook := b.create(t, accountOpts{secret: whsec, settings: endpoint})
	tg := b.create(t, accountOpts{channel: "telegram", secret: "tg-secret", credentials: tgCreds})
	disabled := b.create(t, accountOpts{secret: whsec})
	b.setStatus(t, b.tenant, disabled, db.AccountDisabled)

	a, err := b.resolver.Inbound(ctx, "webhook", hook)
	require.NoError(t, err)
	require.Equal(t, hook, a.ID)
	require.Equal(t, b.tenant, a.TenantID, "the route names the tenant")
	require.Equal(t, "webhook", a.ChannelType)
	require.NotNil(t, a.Inbound)
	require.Equal(t, whsec, a.Secrets.WebhookSecret, "the webhook secret is opened")

	a, err = b.resolver.Inbound(ctx, "telegram", tg)
	require.NoError(t, err)
	require.JSONEq(t, tgCreds, string(a.Secrets.Credentials))

	for name, tc := range map[string]struct {
		channel string
		id      uuid.UUID
	}{
		"UnknownID":       {"webhook", uuid.New()},
		"WrongChannel":    {"slack", hook},
		"DisabledAccount": {"webhook", disabled},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := b.resolver.Inbound(ctx, tc.channel, tc.id)
			require.ErrorIs(t, err, accounts.ErrUnknown)
		})
	}
}

func TestOutbound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tg := b.create(t, accountOpts{channel: "telegram", secret: "tg-secret", credentials: tgCreds})
	noToken := b.create(t, accountOpts{channel: "telegram", secret: "tg-secret"})
	_, err := b.env.OwnerPool(t).Exec(ctx, `UPDATE mio.accounts SET max_attempts = 3, rate_limit_per_sec = 1 WHERE id = $1`, tg)
	require.NoError(t, err)

	a, err := b.resolver.Outbound(ctx, b.tenant, tg)
	require.NoError(t, err)
	require.NotNil(t, a.Outbound)
	require.Equal(t, "telegram", a.ChannelType)
	require.Equal(t, db.AccountActive, a.Status)
	require.True(t, a.Capabilities.Edit)
	require.True(t, a.RateLimited)
	require.Equal(t, int32(3), *a.MaxAttempts)

	_, err = b.resolver.Outbound(ctx, b.tenant, noToken)
	require.ErrorIs(t, err, accounts.ErrCannotSend, "the adapter refuses to send without a bot token")
	_, err = b.resolver.Inbound(ctx, "telegram", noToken)
	require.NoError(t, err, "the same account still receives webhooks")

	missing := uuid.New()
	_, err = b.resolver.Outbound(ctx, b.tenant, missing)
	require.ErrorIs(t, err, accounts.ErrCannotSend)
	require.ErrorContains(t, err, "account "+missing.String()+" not found")

	b.setStatus(t, b.tenant, tg, db.AccountDisabled)
	a, err = b.newResolver(b.box).Outbound(ctx, b.tenant, tg)
	require.NoError(t, err, "a disabled account resolves: the dispatcher decides what its messages become")
	require.Equal(t, db.AccountDisabled, a.Status)
}

func TestWrongTenantNotVisible(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other := b.newTenant(t, "other")
	id := b.create(t, accountOpts{secret: whsec, settings: endpoint})

	check := func(t *testing.T) {
		t.Helper()
		_, err := b.resolver.Outbound(ctx, other, id)
		require.ErrorIs(t, err, accounts.ErrCannotSend)
		_, err = b.resolver.Secrets(ctx, other, id)
		require.ErrorIs(t, err, accounts.ErrNotFound)
	}
	// Not visible from the database (row-level security) ...
	check(t)
	// ... and an absence recorded for the other tenant does not hide the
	// account from its own tenant or its webhooks ...
	_, err := b.resolver.Outbound(ctx, b.tenant, id)
	require.NoError(t, err)
	_, err = b.resolver.Inbound(ctx, "webhook", id)
	require.NoError(t, err)
	// ... nor does the cached account leak to the other tenant.
	check(t)
}

func TestCacheHit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	id := b.create(t, accountOpts{secret: whsec, settings: endpoint})

	first, err := b.resolver.Inbound(ctx, "webhook", id)
	require.NoError(t, err)
	// Every path shares the one entry: no second load, no second opening.
	out, err := b.resolver.Outbound(ctx, b.tenant, id)
	require.NoError(t, err)
	require.Same(t, first, out)
	sec, err := b.resolver.Secrets(ctx, b.tenant, id)
	require.NoError(t, err)
	require.Equal(t, first.Secrets, sec)

	// A hit does not read the database: a change there is not seen yet.
	_, err = b.env.OwnerPool(t).Exec(ctx, `UPDATE mio.accounts SET max_attempts = 9 WHERE id = $1`, id)
	require.NoError(t, err)
	b.clock.Add(accounts.CacheTTL - 1)
	again, err := b.resolver.Outbound(ctx, b.tenant, id)
	require.NoError(t, err)
	require.Same(t, first, again)
	require.Nil(t, again.MaxAttempts)

	b.clock.Add(1)
	fresh, err := b.resolver.Outbound(ctx, b.tenant, id)
	require.NoError(t, err)
	require.NotSame(t, first, fresh, "the entry expired at CacheTTL")
	require.Equal(t, int32(9), *fresh.MaxAttempts)
}

// TestDisableWithinBound: disabling an account (mio admin, another
// process) takes effect for webhooks and sends within CacheTTL; Forget
// makes it at once.
func TestDisableWithinBound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	id := b.create(t, accountOpts{secret: whsec, settings: endpoint})
	_, err := b.resolver.Inbound(ctx, "webhook", id)
	require.NoError(t, err)

	b.setStatus(t, b.tenant, id, db.AccountDisabled)
	b.clock.Add(accounts.CacheTTL - 1)
	_, err = b.resolver.Inbound(ctx, "webhook", id)
	require.NoError(t, err, "still cached just before the bound")

	b.clock.Add(1)
	_, err = b.resolver.Inbound(ctx, "webhook", id)
	require.ErrorIs(t, err, accounts.ErrUnknown, "disabled within CacheTTL for webhooks")
	a, err := b.resolver.Outbound(ctx, b.tenant, id)
	require.NoError(t, err)
	require.Equal(t, db.AccountDisabled, a.Status, "and for sends")

	// Enabled again: Forget (the process's own change) is immediate.
	b.setStatus(t, b.tenant, id, db.AccountActive)
	_, err = b.resolver.Inbound(ctx, "webhook", id)
	require.ErrorIs(t, err, accounts.ErrUnknown)
	b.resolver.Forget(id)
	_, err = b.resolver.Inbound(ctx, "webhook", id)
	require.NoError(t, err)
}

// TestAbsentTTL: an id that names no account is remembered AbsentTTL,
// then looked up again.
func TestAbsentTTL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	id := uuid.New()
	_, err := b.resolver.Inbound(ctx, "webhook", id)
	require.ErrorIs(t, err, accounts.ErrUnknown)

	b.create(t, accountOpts{id: id, secret: whsec})
	_, err = b.resolver.Inbound(ctx, "webhook", id)
	require.ErrorIs(t, err, accounts.ErrUnknown, "the absence is cached")
	b.clock.Add(accounts.AbsentTTL)
	_, err = b.resolver.Inbound(ctx, "webhook", id)
	require.NoError(t, err)
}

// TestNoMasterKey: an account with sealed secrets does not resolve
// without the key; the error says why.
func TestNoMasterKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	id := b.create(t, accountOpts{secret: whsec, settings: endpoint})
	r := b.newResolver(nil)

	_, err := r.Inbound(ctx, "webhook", id)
	require.ErrorContains(t, err, "MIO_MASTER_KEY")
	require.NotErrorIs(t, err, accounts.ErrUnknown, "the webhook path answers 503, not 404")
	_, err = r.Outbound(ctx, b.tenant, id)
	require.ErrorIs(t, err, accounts.ErrCannotSend)
	require.ErrorContains(t, err, "MIO_MASTER_KEY")
	_, err = r.Secrets(ctx, b.tenant, id)
	require.ErrorContains(t, err, "MIO_MASTER_KEY")
}

// TestConcurrentUse: webhooks, sends and forgets share the one cache (run
// with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ids := []uuid.UUID{b.create(t, accountOpts{secret: whsec, settings: endpoint}), b.create(t, accountOpts{secret: whsec, settings: endpoint})}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				id := ids[(g+i)%len(ids)]
				var err error
				switch i % 3 {
				case 0:
					_, err = b.resolver.Inbound(ctx, "webhook", id)
				case 1:
					_, err = b.resolver.Outbound(ctx, b.tenant, id)
				default:
					b.resolver.Forget(id)
					b.clock.Add(accounts.CacheTTL / 10)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
