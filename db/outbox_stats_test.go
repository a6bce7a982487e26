package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
)

// TestOutboxKeepStatsAnalyzesGrowthCoarsely: mio.outbox_keep_stats
// analyzes the outbox once it has changed by half (at least 1,000 rows),
// with a coarse sample (statistics target 10: at the default target the
// ANALYZE it runs again and again while an outbox grows takes 143–271 ms a
// time), and not again until it changes again.
func TestOutboxKeepStatsAnalyzesGrowthCoarsely(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)

	conn, err := owner.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `
		INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key, request_sha256)
		SELECT $1, gen_random_uuid(), $2, 'webhook', 'c' || n, 'k' || n, '\x00'::bytea FROM generate_series(1, 3000) AS n`,
		b.tenant, b.account)
	require.NoError(t, err)
	// The inserts reach the statistics the function reads when this
	// session reports them: at once, when asked to.
	_, err = conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		did, err := db.OutboxKeepStats(ctx, b.env.Pool)
		require.NoError(t, err)
		return did
	}, 15*time.Second, 100*time.Millisecond, "3,000 new rows were not analyzed")

	// A coarse sample: a histogram of 10 buckets (11 bounds) over the ids,
	// where the default target gives 100.
	var bounds int
	require.NoError(t, owner.QueryRow(ctx, `SELECT coalesce(array_length(histogram_bounds::text::text[], 1), 0)
		FROM pg_stats WHERE schemaname = 'mio' AND tablename = 'outbox' AND attname = 'id'`).Scan(&bounds))
	require.Positive(t, bounds, "no histogram over the ids")
	require.LessOrEqual(t, bounds, 11, "the analyze took the full sample")

	did, err := db.OutboxKeepStats(ctx, b.env.Pool)
	require.NoError(t, err)
	require.False(t, did, "analyzed again without changes")
}
