package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
)

// TestStreamCountsFoldEveryTenant: one fold walks every tenant under its
// own setting (row-level security hides the others), leaves one delta row
// per key with the same sums, returns the rows folded away across tenants,
// and leaves its transaction without a tenant; a second fold finds nothing.
func TestStreamCountsFoldEveryTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := setupPartitions(t)
	second := &partitionBundle{env: first.env, tenant: uuid.New()}
	_, err := db.TenantInsert(ctx, first.env.Pool, second.tenant, "partitions-2")
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, first.env.Pool, second.tenant, func(tx pgx.Tx) error {
		a, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: second.tenant, ChannelType: "webhook", DisplayName: "hook"})
		second.account = a.ID
		return err
	}))
	for _, b := range []*partitionBundle{first, second} {
		for range 3 {
			b.insertRow(t, uuid.Must(uuid.NewV7()), true)
		}
	}
	counts := func(tenant uuid.UUID) (rows, sum int) {
		require.NoError(t, db.InTenantTx(ctx, first.env.Pool, tenant, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(n), 0) FROM mio.stream_counts WHERE tenant_id = $1`, tenant).Scan(&rows, &sum)
		}))
		return rows, sum
	}
	for _, b := range []*partitionBundle{first, second} {
		rows, sum := counts(b.tenant)
		require.Equal(t, 6, rows, "a delta row per commit and stage")
		require.Equal(t, 6, sum)
	}

	var tenant string
	require.NoError(t, db.InTx(ctx, first.env.Pool, func(tx pgx.Tx) error {
		n, err := db.StreamCountsFoldTx(ctx, tx)
		require.Equal(t, int64(8), n, "two tenants, two keys each, three rows folded into one")
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT current_setting('app.current_tenant_id', true)`).Scan(&tenant)
	}))
	require.Empty(t, tenant)
	for _, b := range []*partitionBundle{first, second} {
		rows, sum := counts(b.tenant)
		require.Equal(t, 2, rows, "one row per stage")
		require.Equal(t, 6, sum)
	}
	n, err := db.StreamCountsFold(ctx, first.env.Pool)
	require.NoError(t, err)
	require.Zero(t, n)
}
