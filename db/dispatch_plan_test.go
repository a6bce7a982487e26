package db_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
)

// TestDispatchClaimAndFinishReadOnlyTheirRows: the dispatcher's claim and
// finish (mio.dispatch_claim, mio.dispatch_finish; migration 00034) read
// the rows they are given and no others, whatever the statistics say.
// The hazard they replace: a tenant new to the outbox's statistics (another
// tenant's rows analyzed, then this tenant's first burst — the dispatch
// bench, a customer's first minutes) is estimated at a row or two, and the
// claim's `tenant_id = $1 AND id = ANY ($2)` read every row of the tenant
// with the ids as a filter (44,872 rows removed per finish in the bench).
// The functions' generic plans are also made while the outbox is small
// (on the same connection, before the burst), as a server's are. The old
// form is run too, so the test proves it sets the hazard up.
func TestDispatchClaimAndFinishReadOnlyTheirRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)

	// Another tenant's rows make up the statistics.
	other, err := db.TenantInsert(ctx, b.env.Pool, uuid.Nil, "other")
	require.NoError(t, err)
	var otherAccount uuid.UUID
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, other.ID, func(tx pgx.Tx) error {
		a, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: other.ID, ChannelType: "webhook", DisplayName: "o"})
		otherAccount = a.ID
		return err
	}))
	grow := func(tenant, account uuid.UUID, prefix string, n int) {
		_, err := owner.Exec(ctx, `
			INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key, request_sha256)
			SELECT $1, gen_random_uuid(), $2, 'webhook', $3 || n, $3 || n, '\x00'::bytea FROM generate_series(1, $4) AS n`,
			tenant, account, prefix, n)
		require.NoError(t, err)
	}
	grow(other.ID, otherAccount, "o", 2000)
	first := b.insert(t, "first", "c")
	_, err = owner.Exec(ctx, `ANALYZE mio.outbox`)
	require.NoError(t, err)

	// One session, as a server's connection: the functions' plans are made
	// on the small outbox by a claim and a finish of the first row.
	conn, err := b.env.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	inTx := func(fn func(tx pgx.Tx)) {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck
		_, err = tx.Exec(ctx, `SELECT set_config('app.current_tenant_id', $1, true)`, b.tenant.String())
		require.NoError(t, err)
		fn(tx)
		require.NoError(t, tx.Commit(ctx))
	}
	// read returns the outbox rows read so far in tx, by index or scan.
	read := func(tx pgx.Tx) int64 {
		var n int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0)
			FROM pg_stat_xact_user_tables WHERE schemaname = 'mio' AND relname = 'outbox'`).Scan(&n))
		return n
	}
	claimAndFinish := func(ids []uuid.UUID) (claimRead, finishRead int64) {
		inTx(func(tx pgx.Tx) {
			r0 := read(tx)
			claimed, err := claimOnly(ctx, tx, b.tenant, ids)
			require.NoError(t, err)
			require.Len(t, claimed, len(ids))
			r1 := read(tx)
			fins := make([]db.OutboxFinish, len(claimed))
			for i, c := range claimed {
				fins[i] = db.OutboxFinish{ID: c, AttemptNo: 1, Outcome: db.OutcomeHandedOff, Detail: []byte(`{}`)}
			}
			done, err := db.OutboxFinishBatch(ctx, tx, b.tenant, fins)
			require.NoError(t, err)
			require.Len(t, done, len(ids))
			claimRead, finishRead = r1-r0, read(tx)-r1
		})
		return claimRead, finishRead
	}
	claimAndFinish([]uuid.UUID{first})

	// This tenant's burst, after the statistics and the plans.
	grow(b.tenant, b.account, "c", 3000)
	var ids []uuid.UUID
	b.tx(t, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM mio.outbox WHERE conversation_id IN ('c10', 'c2000')`)
		if err == nil {
			ids, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		}
		return err
	})
	require.Len(t, ids, 2)

	// The old claim's lookup, planned for its values: the tenant's rows
	// read and filtered.
	var plan []string
	b.tx(t, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)
			SELECT id FROM mio.outbox WHERE tenant_id = $1 AND id = ANY ($2)`, b.tenant, ids)
		if err == nil {
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		return err
	})
	require.Regexp(t, regexp.MustCompile(`Rows Removed by Filter: \d{4}`), strings.Join(plan, "\n"),
		"the setup no longer makes the old lookup read the tenant's rows")

	claimRead, finishRead := claimAndFinish(ids)
	require.Less(t, claimRead, int64(20), "the claim read %d outbox rows for 2", claimRead)
	require.Less(t, finishRead, int64(20), "the finish read %d outbox rows for 2", finishRead)
}

// claimOnly runs the dispatcher's claim (mio.dispatch_claim) in tx and
// returns the ids it claimed.
func claimOnly(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM mio.dispatch_claim($1, $2, $3)`, tenant, ids, (30 * time.Second).Seconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}
