package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

type partitionBundle struct {
	env     *dbtest.Env
	tenant  uuid.UUID
	account uuid.UUID
}

func setupPartitions(t *testing.T) *partitionBundle {
	t.Helper()
	ctx := context.Background()
	b := &partitionBundle{env: dbtest.New(t), tenant: uuid.New()}
	_, err := db.TenantInsert(ctx, b.env.Pool, b.tenant, "partitions")
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		a, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: b.tenant, ChannelType: "webhook", DisplayName: "hook"})
		b.account = a.ID
		return err
	}))
	return b
}

// v7At is a UUIDv7 of time t.
func v7At(t time.Time) uuid.UUID {
	u := uuid.Must(uuid.NewV7())
	f := db.IDFloor(t)
	copy(u[0:6], f[0:6])
	return u
}

// insertRow writes one inbox message (ready or received) with id.
func (b *partitionBundle) insertRow(t *testing.T, id uuid.UUID, ready bool) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, conversation_id, source_message_id, state, envelope,
                       received_at, ready_xid, ready_seq, ready_at)
VALUES ($1, $2::uuid, $3, 'webhook', 'c', $2::uuid::text, CASE WHEN $4 THEN 'ready' ELSE 'received' END, '{}', now(),
        CASE WHEN $4 THEN pg_current_xact_id() END, CASE WHEN $4 THEN nextval('mio.inbox_ready_seq') END,
        CASE WHEN $4 THEN now() END)`, b.tenant, id, b.account, ready)
		return err
	}))
}

// archiveAll puts the tenant's archive position at the current snapshot:
// every committed message counts as archived.
func (b *partitionBundle) archiveAll(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
INSERT INTO mio.archive_cursors (tenant_id, log_lo) VALUES ($1, pg_current_snapshot())
ON CONFLICT (tenant_id) DO UPDATE SET log_lo = excluded.log_lo, log_hi = NULL, ready_xid = '0', ready_seq = 0`, b.tenant)
		return err
	}))
}

func TestInboxPartitionRetire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupPartitions(t)
	day := time.Now().Add(-10 * 24 * time.Hour)
	created, err := db.InboxPartitionsEnsure(ctx, b.env.Pool, day, day)
	require.NoError(t, err)
	require.Equal(t, 1, created)
	ready, pending := v7At(day), v7At(day.Add(time.Second))
	b.insertRow(t, ready, true)
	b.insertRow(t, pending, false)
	before := time.Now().Add(-7 * 24 * time.Hour)

	_, ok, err := db.InboxPartitionRetire(ctx, b.env.Pool, before)
	require.NoError(t, err)
	require.False(t, ok, "not archived: kept")

	b.archiveAll(t)
	_, ok, err = db.InboxPartitionRetire(ctx, b.env.Pool, before)
	require.NoError(t, err)
	require.False(t, ok, "a message not ready yet: kept")

	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE mio.inbox SET state = 'ready', ready_xid = pg_current_xact_id(),
            ready_seq = nextval('mio.inbox_ready_seq'), ready_at = now() WHERE tenant_id = $1 AND id = $2`, b.tenant, pending)
		return err
	}))
	b.archiveAll(t)
	r, ok, err := db.InboxPartitionRetire(ctx, b.env.Pool, before)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, db.InboxPartitionName(day), r.Name)
	parts, err := db.InboxPartitionList(ctx, b.env.Pool)
	require.NoError(t, err)
	for _, p := range parts {
		require.NotEqual(t, r.Name, p.Name)
	}
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.InboxGet(ctx, tx, b.tenant, ready)
		require.ErrorIs(t, err, db.ErrNotFound)
		return nil
	}))
	_, ok, err = db.InboxPartitionRetire(ctx, b.env.Pool, before)
	require.NoError(t, err)
	require.False(t, ok, "nothing else due (today's partitions are younger)")
}

// TestInboxPartitionPlans: with history in an older day, the hot lookups
// use an index on the live partition (by id: that partition only), never a
// sequential scan.
func TestInboxPartitionPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupPartitions(t)
	old := time.Now().Add(-3 * 24 * time.Hour)
	_, err := db.InboxPartitionsEnsure(ctx, b.env.Pool, old, old)
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		for _, at := range []time.Time{old, time.Now()} {
			_, err := tx.Exec(ctx, `
INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, conversation_id, source_message_id, state, envelope,
                       received_at, ready_xid, ready_seq, ready_at)
SELECT $1, (substr(replace(mio.uuid_time_floor($3)::text, '-', ''), 1, 12) || '7' || substr(md5(g::text), 1, 19))::uuid,
       $2, 'webhook', 'c' || (g % 100), 's' || g || $3::text, 'ready', '{}', $3,
       pg_current_xact_id(), nextval('mio.inbox_ready_seq'), $3
FROM generate_series(1, 20000) AS g`, b.tenant, b.account, at)
			if err != nil {
				return err
			}
		}
		return nil
	}))
	_, err = b.env.OwnerPool(t).Exec(ctx, "ANALYZE mio.inbox")
	require.NoError(t, err)
	live := db.InboxPartitionName(time.Now())
	var id uuid.UUID
	var xid string
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT id, ready_xid::text FROM mio.inbox WHERE tenant_id = $1
            ORDER BY ready_xid DESC, ready_seq DESC LIMIT 1 OFFSET 100`, b.tenant).Scan(&id, &xid)
	}))
	cases := []struct {
		name     string
		sql      string
		args     []any
		liveOnly bool
	}{
		{"get by id", `SELECT * FROM mio.inbox WHERE tenant_id = $1 AND id = $2`, []any{b.tenant, id}, true},
		{"get many", `SELECT id, envelope, raw FROM mio.inbox WHERE tenant_id = $1 AND id = ANY ($2::uuid[])`,
			[]any{b.tenant, []uuid.UUID{id}}, true},
		// The consumers' read of the ready stage (mio.log_ready) from the
		// window that holds the live day's rows.
		{"ready window", `SELECT id FROM mio.log_ready($1, ($2 || ':' || $2 || ':')::pg_snapshot, pg_current_snapshot(),
            '0', 0, '{}', '{}', '{}', NULL, 100)`, []any{b.tenant, xid}, false},
		{"received window", `SELECT id FROM mio.log_received($1, ($2 || ':' || $2 || ':')::pg_snapshot, pg_current_snapshot(),
            '0', 0, '{}', '{}', '{}', NULL, 100)`, []any{b.tenant, xid}, false},
		{"tail", `SELECT id FROM mio.inbox WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT 100`, []any{b.tenant, id}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
				rows, err := tx.Query(ctx, "EXPLAIN "+c.sql, c.args...)
				require.NoError(t, err)
				var plan []string
				for rows.Next() {
					var line string
					require.NoError(t, rows.Scan(&line))
					plan = append(plan, line)
				}
				require.NoError(t, rows.Err())
				text := strings.Join(plan, "\n")
				// Empty partitions (days ahead) cost nothing to scan; the
				// ones holding rows must be read by an index.
				require.NotContains(t, text, "Seq Scan on "+live+" ", text)
				require.NotContains(t, text, "Seq Scan on "+db.InboxPartitionName(old)+" ", text)
				require.Contains(t, text, live, text)
				if c.liveOnly {
					require.NotContains(t, text, db.InboxPartitionName(old), text)
				}
				return nil
			}))
		})
	}
}
