package workers_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
	"github.com/miohq/mio/secretbox"
)

// TestUpgradedDatabaseServes: a database created before the schema
// baseline, with data (migrations/testdata/v0-schema-and-data.sql),
// upgraded by migrate up, is served: its queued sends are dispatched, a new
// send is handed off, its dead letters are requeued with mio.requeue and
// delivered, and a consumer pulls the messages it had not taken, and its
// dead delivery again once requeued.
func TestUpgradedDatabaseServes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fixture, err := os.ReadFile("../migrations/testdata/v0-schema-and-data.sql")
	require.NoError(t, err)
	env := dbtest.NewWith(t, dbtest.Options{Load: fixture})
	box, err := secretbox.New(bytes.Repeat([]byte("k"), 32)) // the fixture's key
	require.NoError(t, err)
	b := &outBundle{env: env, box: box, accounts: map[string]uuid.UUID{}, owner: env.OwnerPool(t)}
	b.fake = newFakeProviders(t, nil)
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT id FROM mio.tenants`).Scan(&b.tenant))
	rows, err := b.owner.Query(ctx, `SELECT channel_type, id FROM mio.accounts WHERE tenant_id = $1`, b.tenant)
	require.NoError(t, err)
	for rows.Next() {
		var ct string
		var id uuid.UUID
		require.NoError(t, rows.Scan(&ct, &id))
		b.accounts[ct] = id
	}
	require.NoError(t, rows.Err())
	b.ownerExec(t, `UPDATE mio.accounts SET settings = jsonb_set(settings, '{endpoint_url}', to_jsonb($1::text)) WHERE channel_type = 'webhook'`,
		b.fake.srv.URL+"/webhook/in")
	// The fixture's times are those of the day it was made: "agent"'s open
	// lease (an hour long then) is moved to an hour from now, so that it is
	// still open whenever the test runs.
	b.ownerExec(t, `UPDATE mio.consumer_leases SET expires_at = now() + interval '1 hour' WHERE consumer_name = 'agent'`)
	var queued, dead []uuid.UUID
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT
		array(SELECT id FROM mio.outbox WHERE handoff_state = 'queued'),
		array(SELECT id FROM mio.outbox WHERE handoff_state = 'dead')`).Scan(&queued, &dead))
	require.Len(t, queued, 2)
	require.Len(t, dead, 1)

	b.clients = append(b.clients, b.newClient(t, outOpts{sweep: true}, true))
	b.waitTerminal(t, queued, 20*time.Second)
	sent := b.send(t, "webhook", "after-upgrade", "hello", nil)
	b.waitTerminal(t, []uuid.UUID{sent}, 20*time.Second)
	for _, id := range append(queued, sent) {
		got, _ := b.get(t, id)
		require.Equal(t, db.HandoffHandedOff, got.HandoffState, id)
	}

	requeue := func(id uuid.UUID) int {
		var n int
		require.NoError(t, db.InTenantTx(ctx, env.Pool, b.tenant, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT mio.requeue($1)`, id).Scan(&n)
		}))
		return n
	}
	require.Equal(t, 1, requeue(dead[0]))
	require.Eventually(t, func() bool {
		got, _ := b.get(t, dead[0])
		return got.HandoffState == db.HandoffHandedOff
	}, 20*time.Second, 20*time.Millisecond)

	// Inbound: "agent" took 3 of the 6 messages (acked 2, one leased for an
	// hour); "fragile" dead-lettered the messages it pulled.
	cs := consume.New(env.Pool, notify.New(nil, nil, notify.Options{}), metrics.New(), nil, consume.Options{MaxPoll: 20 * time.Millisecond})
	ds, err := cs.Pull(ctx, b.tenant, "agent", 10, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 3, "the messages not taken before the upgrade")
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i] = d.DeliveryID
	}
	res, err := cs.Settle(ctx, b.tenant, "agent", "ack", ids, consume.SettleOptions{})
	require.NoError(t, err)
	for _, r := range res {
		require.True(t, r.OK, r.Error)
	}

	var deadMessage uuid.UUID
	require.NoError(t, b.owner.QueryRow(ctx,
		`SELECT message_id FROM mio.consumer_deliveries WHERE consumer_name = 'fragile' AND state = 'dead' ORDER BY message_id LIMIT 1`).Scan(&deadMessage))
	require.Equal(t, 1, requeue(deadMessage))
	var got []consume.Delivery
	require.Eventually(t, func() bool {
		ds, err := cs.Pull(ctx, b.tenant, "fragile", 10, 100*time.Millisecond)
		require.NoError(t, err)
		got = append(got, ds...)
		return len(got) > 0
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 1, got[0].DeliveryCount, "a requeued dead delivery starts a fresh count")
}
