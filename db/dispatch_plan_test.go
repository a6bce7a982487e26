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
// finish (mio.dispatch_claim, mio.dispatch_finish), and the rate-limited
// claim's steps (mio.dispatch_candidates, mio.dispatch_mark_sending,
// mio.dispatch_probe) read the rows they are given and no others, whatever
// the statistics say, in the two cases where a plain lookup by id reads
// the tenant's rows:
//  1. generic plans made on a young, never-analyzed outbox (a new
//     install's first sends, a benchmark's warm-up), then the tenant's
//     burst: looked up as `tenant_id = $1 AND id = $2`, the primary key
//     ties with the idempotency key's index and loses, every row of the
//     tenant read per id;
//  2. a tenant new to the statistics (others' rows analyzed, then its
//     burst), estimated at a row: a claim by `id = ANY ($2)` reads the
//     tenant's rows with the ids as a filter (44,872 rows removed per
//     finish in the dispatch bench). That plain lookup is run too, so the
//     test proves the setup.
func TestDispatchClaimAndFinishReadOnlyTheirRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)

	newTenant := func(name string) (tenant, account uuid.UUID) {
		tn, err := db.TenantInsert(ctx, b.env.Pool, uuid.Nil, name)
		require.NoError(t, err)
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, tn.ID, func(tx pgx.Tx) error {
			a, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: tn.ID, ChannelType: "webhook", DisplayName: name})
			account = a.ID
			return err
		}))
		return tn.ID, account
	}
	// grow inserts n queued rows of the tenant, conversations prefix1..n,
	// and returns the ids of prefix10 and prefix2000 (for the claim), then
	// of prefix20 and prefix1500 (for the rate-limited claim).
	grow := func(tenant, account uuid.UUID, prefix string, n int) []uuid.UUID {
		rows, err := owner.Query(ctx, `
			INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key, request_sha256)
			SELECT $1, gen_random_uuid(), $2, 'webhook', $3 || n, $3 || n, '\x00'::bytea FROM generate_series(1, $4) AS n
			RETURNING id, conversation_id`, tenant, account, prefix, n)
		require.NoError(t, err)
		byConv := map[string]uuid.UUID{}
		for rows.Next() {
			var id uuid.UUID
			var conv string
			require.NoError(t, rows.Scan(&id, &conv))
			byConv[conv] = id
		}
		require.NoError(t, rows.Err())
		return []uuid.UUID{byConv[prefix+"10"], byConv[prefix+"2000"], byConv[prefix+"20"], byConv[prefix+"1500"]}
	}

	// One session, as a server's connection: the functions' generic plans
	// are made by its first calls and kept.
	conn, err := b.env.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	// read returns the outbox rows read so far in tx, by index or scan.
	read := func(tx pgx.Tx) int64 {
		var n int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0)
			FROM pg_stat_xact_user_tables WHERE schemaname = 'mio' AND relname = 'outbox'`).Scan(&n))
		return n
	}
	// begin starts a transaction of tenant on the session.
	begin := func(tenant uuid.UUID) pgx.Tx {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT set_config('app.current_tenant_id', $1, true)`, tenant.String())
		require.NoError(t, err)
		return tx
	}
	claimAndFinish := func(tenant uuid.UUID, ids []uuid.UUID) (claimRead, finishRead int64) {
		tx := begin(tenant)
		defer tx.Rollback(ctx) //nolint:errcheck
		r0 := read(tx)
		claimed, err := claimOnly(ctx, tx, tenant, ids)
		require.NoError(t, err)
		require.Len(t, claimed, len(ids))
		r1 := read(tx)
		fins := make([]db.OutboxFinish, len(claimed))
		for i, c := range claimed {
			fins[i] = db.OutboxFinish{ID: c, AttemptNo: 1, Outcome: db.OutcomeHandedOff, Detail: []byte(`{}`)}
		}
		done, err := db.OutboxFinishBatch(ctx, tx, tenant, fins)
		require.NoError(t, err)
		require.Len(t, done, len(ids))
		claimRead, finishRead = r1-r0, read(tx)-r1
		require.NoError(t, tx.Commit(ctx))
		return claimRead, finishRead
	}
	// claimLimited runs the rate-limited claim's three steps, as
	// workers.Dispatcher.claimLimited does, and returns what each read.
	claimLimited := func(tenant uuid.UUID, ids []uuid.UUID) (candRead, markRead, probeRead int64) {
		tx := begin(tenant)
		defer tx.Rollback(ctx) //nolint:errcheck
		r0 := read(tx)
		cands, err := db.OutboxClaimCandidates(ctx, tx, tenant, ids)
		require.NoError(t, err)
		require.Len(t, cands, len(ids))
		r1 := read(tx)
		marks := make([]db.MarkSending, len(cands))
		for i, c := range cands {
			marks[i] = db.MarkSending{ID: c.ID}
		}
		moved, err := db.OutboxMarkSending(ctx, tx, tenant, 30*time.Second, marks)
		require.NoError(t, err)
		require.Len(t, moved, len(ids))
		r2 := read(tx)
		probes, err := db.OutboxProbe(ctx, tx, tenant, ids)
		require.NoError(t, err)
		require.Len(t, probes, len(ids))
		candRead, markRead, probeRead = r1-r0, r2-r1, read(tx)-r2
		require.NoError(t, tx.Commit(ctx))
		return candRead, markRead, probeRead
	}
	check := func(what string, tenant uuid.UUID, ids []uuid.UUID) {
		claimRead, finishRead := claimAndFinish(tenant, ids[:2])
		require.Less(t, claimRead, int64(20), "%s: the claim read %d outbox rows for 2", what, claimRead)
		require.Less(t, finishRead, int64(20), "%s: the finish read %d outbox rows for 2", what, finishRead)
		candRead, markRead, probeRead := claimLimited(tenant, ids[2:])
		require.Less(t, candRead, int64(20), "%s: the candidates read %d outbox rows for 2", what, candRead)
		require.Less(t, markRead, int64(20), "%s: the mark read %d outbox rows for 2", what, markRead)
		require.Less(t, probeRead, int64(20), "%s: the probe read %d outbox rows for 2", what, probeRead)
	}

	// 1. Plans made on a young outbox, never analyzed (a new install's
	// first sends, a benchmark's warm-up), then the tenant's burst.
	first := b.insert(t, "first", "c")
	claimAndFinish(b.tenant, []uuid.UUID{first})
	claimLimited(b.tenant, []uuid.UUID{b.insert(t, "second", "c")})
	check("plans made on a young outbox", b.tenant, grow(b.tenant, b.account, "c", 3000))

	// 2. A tenant new to the statistics: the others' rows analyzed, then
	// its burst.
	late, lateAccount := newTenant("late")
	other, otherAccount := newTenant("other")
	grow(other, otherAccount, "o", 2000)
	_, err = owner.Exec(ctx, `ANALYZE mio.outbox`)
	require.NoError(t, err)
	ids := grow(late, lateAccount, "l", 3000)

	// A plain lookup by `id = ANY`, planned for its values: the tenant's
	// rows read and filtered.
	var plan []string
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, late, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)
			SELECT id FROM mio.outbox WHERE tenant_id = $1 AND id = ANY ($2)`, late, ids)
		if err == nil {
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		return err
	}))
	require.Regexp(t, regexp.MustCompile(`Rows Removed by Filter: \d{4}`), strings.Join(plan, "\n"),
		"the setup no longer makes the plain lookup read the tenant's rows")
	check("a tenant new to the statistics", late, ids)
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
