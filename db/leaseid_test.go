package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

// TestLeaseDeliveryID: lease-range delivery ids round-trip, are valid
// version 8 UUIDs, never collide with random (version 4) ids, and the Go
// encoder agrees with mio.lease_delivery_id in SQL (which materializes
// them into per-message rows).
func TestLeaseDeliveryID(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	for _, c := range []struct {
		lease int64
		idx   int
	}{{1, 0}, {1, 99}, {42, 999}, {1 << 40, 4095}, {1<<48 - 1, 7}} {
		id := db.LeaseDeliveryID(c.lease, c.idx)
		require.Equal(t, uuid.Version(8), id.Version())
		require.Equal(t, uuid.RFC4122, id.Variant())
		l, i, ok := db.ParseLeaseDeliveryID(id)
		require.True(t, ok)
		require.Equal(t, c.lease, l)
		require.Equal(t, c.idx, i)
		var fromSQL uuid.UUID
		require.NoError(t, env.Pool.QueryRow(ctx, "SELECT mio.lease_delivery_id($1, $2)", c.lease, c.idx).Scan(&fromSQL))
		require.Equal(t, id, fromSQL, "lease %d idx %d", c.lease, c.idx)
	}
	require.NotEqual(t, db.LeaseDeliveryID(1, 1), db.LeaseDeliveryID(1, 2))
	require.NotEqual(t, db.LeaseDeliveryID(1, 1), db.LeaseDeliveryID(2, 1))
	for range 1000 {
		_, _, ok := db.ParseLeaseDeliveryID(uuid.New())
		require.False(t, ok, "a random delivery id is not a lease member")
	}
	v8 := db.LeaseDeliveryID(5, 5)
	v8[15] ^= 1
	_, _, ok := db.ParseLeaseDeliveryID(v8)
	require.False(t, ok, "a version 8 id without MIO's tail is not a lease member")
}
