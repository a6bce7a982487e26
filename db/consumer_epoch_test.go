package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db/dbtest"
)

// TestConsumerIDsGuard: after the server (re)started, the first call moves
// the lease range ids a million ahead — ids a lost asynchronous pull
// handed out before a crash are never handed out again — and later calls
// leave them alone.
func TestConsumerIDsGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	owner := env.OwnerPool(t)
	next := func() int64 {
		var n int64
		require.NoError(t, owner.QueryRow(ctx, "SELECT nextval('mio.consumer_take_ids')").Scan(&n))
		return n
	}
	guard := func() bool {
		var moved bool
		require.NoError(t, env.Pool.QueryRow(ctx, "SELECT mio.consumer_ids_guard()").Scan(&moved))
		return moved
	}
	require.False(t, guard(), "same server start: nothing to do")
	before := next()
	require.False(t, guard())
	require.Equal(t, before+1, next(), "the ids go on one by one")

	// As if the server had started again since the last pull.
	_, err := owner.Exec(ctx, "UPDATE mio.consumer_id_epoch SET started_at = started_at - interval '1 hour'")
	require.NoError(t, err)
	require.True(t, guard(), "the first call after a restart moves the ids")
	require.GreaterOrEqual(t, next(), before+1_000_000)
	require.False(t, guard(), "once")
}
