package accounts_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/secretbox"
)

// testBundle is a migrated database with one tenant, a master key and a
// resolver on a clock the test moves.
type testBundle struct {
	env      *dbtest.Env
	box      *secretbox.Box
	registry *channels.Registry
	clock    *clock
	resolver *accounts.Resolver
	tenant   uuid.UUID
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	b := &testBundle{env: dbtest.New(t), box: box, registry: builtin.Registry(builtin.Options{}),
		clock: &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
	b.resolver = b.newResolver(box)
	b.tenant = b.newTenant(t, "t")
	return b
}

// newResolver returns a resolver with its own cache on the bundle's clock.
func (b *testBundle) newResolver(box *secretbox.Box) *accounts.Resolver {
	return accounts.NewResolver(b.env.Pool, accounts.ResolverConfig{Box: box, Registry: b.registry, Now: b.clock.Now})
}

func (b *testBundle) newTenant(t *testing.T, name string) uuid.UUID {
	t.Helper()
	tn, err := db.TenantInsert(context.Background(), b.env.Pool, uuid.Nil, name)
	require.NoError(t, err)
	return tn.ID
}

// accountOpts describe a test account; zero values take a webhook
// account of the bundle's tenant.
type accountOpts struct {
	tenant      uuid.UUID
	id          uuid.UUID
	channel     string
	settings    string
	credentials string
	secret      string
}

// create stores an account as `mio admin account create` does: the spec
// validated against the registry, its secrets sealed.
func (b *testBundle) create(t *testing.T, o accountOpts) uuid.UUID {
	t.Helper()
	if o.tenant == uuid.Nil {
		o.tenant = b.tenant
	}
	if o.id == uuid.Nil {
		o.id = uuid.New()
	}
	if o.channel == "" {
		o.channel = "webhook"
	}
	spec := &accounts.Spec{TenantID: o.tenant, ID: o.id, ChannelType: o.channel, DisplayName: o.channel,
		WebhookSecret: o.secret}
	if o.settings != "" {
		spec.Settings = json.RawMessage(o.settings)
	}
	if o.credentials != "" {
		spec.Credentials = json.RawMessage(o.credentials)
	}
	require.NoError(t, spec.Validate(b.registry))
	row, err := spec.Seal(b.box)
	require.NoError(t, err)
	b.insert(t, row)
	return o.id
}

func (b *testBundle) insert(t *testing.T, row *db.AccountInsertParams) {
	t.Helper()
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, row.TenantID, func(tx pgx.Tx) error {
		_, err := db.AccountInsert(context.Background(), tx, row)
		return err
	}))
}

func (b *testBundle) setStatus(t *testing.T, tenant, id uuid.UUID, status string) {
	t.Helper()
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, tenant, func(tx pgx.Tx) error {
		_, err := db.AccountSetStatus(context.Background(), tx, tenant, id, status)
		return err
	}))
}

// clock is the resolver's clock: tests move it instead of sleeping.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
