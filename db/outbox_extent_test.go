package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutboxExtent: a freshly migrated database's outbox has a heap of at
// least 128 blocks, analyzed at that size, with vacuum_truncate off, and
// a VACUUM of an outbox emptied of its rows keeps it at 128 pages: the
// statistic the dispatch functions' plans rely on (docs/architecture.md,
// "Planner safety").
func TestOutboxExtent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)
	const floor = 128

	pages := func() (blocks, relpages int64) {
		t.Helper()
		require.NoError(t, owner.QueryRow(ctx, `SELECT pg_relation_size('mio.outbox') / current_setting('block_size')::int,
			relpages FROM pg_class WHERE oid = 'mio.outbox'::regclass`).Scan(&blocks, &relpages))
		return blocks, relpages
	}
	var options []string
	require.NoError(t, owner.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'mio.outbox'::regclass`).Scan(&options))
	require.Contains(t, options, "vacuum_truncate=off")
	blocks, relpages := pages()
	require.GreaterOrEqual(t, blocks, int64(floor), "heap blocks of a migrated outbox")
	require.GreaterOrEqual(t, relpages, int64(floor), "relpages of a migrated outbox")
	var rows int64
	require.NoError(t, owner.QueryRow(ctx, `SELECT count(*) FROM mio.outbox`).Scan(&rows))
	require.Zero(t, rows, "the extent's rows are deleted")

	// Grown past the floor, emptied, vacuumed: the pages stay.
	f := outboxFixture{t: t, owner: owner}
	f.rows(b.tenant, b.account, "grown", 5000, 10, "handed_off")
	f.exec(`DELETE FROM mio.outbox`)
	f.exec(`VACUUM mio.outbox`)
	blocks, relpages = pages()
	require.GreaterOrEqual(t, blocks, int64(floor), "heap blocks after VACUUM of an emptied outbox")
	require.GreaterOrEqual(t, relpages, int64(floor), "relpages after VACUUM of an emptied outbox")
	// The sweeper's ANALYZE (mio.outbox_keep_stats) counts the same blocks.
	f.exec(`ANALYZE mio.outbox`)
	_, relpages = pages()
	require.GreaterOrEqual(t, relpages, int64(floor), "relpages after ANALYZE of an emptied outbox")
}
