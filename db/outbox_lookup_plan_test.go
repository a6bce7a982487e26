package db_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/internal/dbsqlc"
)

// TestOutboxLookupsDescendPerKey: the idempotency check of every group of
// sends (OutboxGetByKeys) looks each key up with its own index descent,
// whatever the statistics say. A tenant's outbox analyzed
// while nearly empty, then grown to 3,000 rows (a new tenant's first
// minutes, a benchmark): as "idempotency_key = ANY (keys)" the generic
// plan scans the tenant's whole outbox and filters it (the batch endpoint
// stalls 2 s per request at 180,000 rows); the lateral form reads a few
// buffers per key. The ANY form is run too, so the test proves it sets
// the hazard up.
func TestOutboxLookupsDescendPerKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)
	b.insert(t, "first", "c")
	_, err := owner.Exec(ctx, `ANALYZE mio.outbox`)
	require.NoError(t, err)
	_, err = owner.Exec(ctx, `
		INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key, request_sha256)
		SELECT $1, gen_random_uuid(), $2, 'webhook', 'c' || n, 'k' || n, '\x00'::bytea FROM generate_series(1, 3000) AS n`,
		b.tenant, b.account)
	require.NoError(t, err)

	// plan runs stmt under a forced generic plan in a tenant transaction
	// with the given SQL literals as its parameters and returns its
	// EXPLAIN ANALYZE.
	plan := func(stmt string, args ...string) string {
		var out []string
		b.tx(t, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `PREPARE lookup AS `+stmt); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) EXECUTE lookup(`+strings.Join(args, ", ")+`)`)
			if err != nil {
				return err
			}
			out, err = pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `DEALLOCATE lookup`)
			return err
		})
		return strings.Join(out, "\n")
	}
	filtered := regexp.MustCompile(`Rows Removed by Filter: \d{3,}`)

	tenant := fmt.Sprintf("'%s'", b.tenant)
	old := plan(`SELECT * FROM mio.outbox WHERE tenant_id = $1 AND idempotency_key = ANY($2::text[])`, tenant, `'{k10,k2000}'`)
	require.Regexp(t, filtered, old, "the setup no longer makes the ANY form filter the tenant's outbox:\n%s", old)

	for _, c := range []struct {
		name, stmt string
		arg        string
	}{
		{"OutboxGetByKeys", dbsqlc.OutboxGetByKeys, `'{k10,k2000,k10}'`},
	} {
		got := plan(c.stmt, c.arg, tenant) // sqlc numbers the array first
		require.NotRegexp(t, filtered, got, "%s filtered the tenant's outbox:\n%s", c.name, got)
		require.Contains(t, got, "actual rows=2 loops=1)\n", "%s: two rows, duplicates once:\n%s", c.name, got)
	}

	// And the statements return what they did.
	b.tx(t, func(tx pgx.Tx) error {
		byKey, err := db.OutboxGetByKeys(ctx, tx, b.tenant, []string{"k10", "k2000", "missing", "k10"})
		require.NoError(t, err)
		require.Len(t, byKey, 2)
		return nil
	})
}
