package consume_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
)

// positions counts the consumer's appended positions and lease ranges.
func (b *testBundle) positions(t *testing.T, consumer string) (positions, ranges int) {
	t.Helper()
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM mio.consumer_positions WHERE consumer_name = $1),
			(SELECT count(*) FROM mio.consumer_leases WHERE consumer_name = $1)`, consumer).Scan(&positions, &ranges)
	}))
	return positions, ranges
}

// TestPullSteadyPaths: the one-round-trip pull (db.PullSteady) takes new
// rows of an unordered consumer as one range within max_ack_pending, and
// hands everything else to the full path without writing: redeliveries
// due (a nak), an ordered consumer, the received stage. The service then
// delivers what the full path owns.
func TestPullSteadyPaths(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "u", client.ConsumerConfig{MaxAckPending: 3})
	require.NoError(t, err)
	ids := b.insert(t, b.tenant, b.account, "conv", "m0", "m1", "m2", "m3")

	ds, err := b.client.Pull(ctx, "u", 2, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 2)
	require.Equal(t, ids[0], ds[0].Message.ID)
	require.Equal(t, ids[1], ds[1].Message.ID)

	// max_ack_pending 3 leaves room for one.
	more, steady, ordered, err := db.PullSteady(ctx, b.env.Pool, b.tenant, "u", 10)
	require.NoError(t, err)
	require.True(t, steady)
	require.False(t, ordered)
	require.Len(t, more, 1)
	require.Equal(t, ids[2], more[0].MessageID)
	none, steady, _, err := db.PullSteady(ctx, b.env.Pool, b.tenant, "u", 10)
	require.NoError(t, err)
	require.True(t, steady)
	require.Empty(t, none, "max_ack_pending reached")

	// A nak makes a redelivery due: the steady pull writes nothing and
	// answers not steady; the service's pull delivers the redelivery first.
	res, err := b.client.Nak(ctx, "u", 0, ds[0].DeliveryID)
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.True(t, res[0].OK, "nak matched: %+v", res[0])
	posBefore, rangesBefore := b.positions(t, "u")
	_, steady, ordered, err = db.PullSteady(ctx, b.env.Pool, b.tenant, "u", 10)
	require.NoError(t, err)
	require.False(t, steady)
	require.False(t, ordered)
	posAfter, rangesAfter := b.positions(t, "u")
	require.Equal(t, posBefore, posAfter, "a pull that is not steady appends no position")
	require.Equal(t, rangesBefore, rangesAfter, "a pull that is not steady leases nothing")
	ds, err = b.client.Pull(ctx, "u", 10, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1, "room for one: the redelivery")
	require.Equal(t, ids[0], ds[0].Message.ID)
	require.Equal(t, 2, ds[0].DeliveryCount)

	// An ordered consumer always takes the full path.
	_, err = b.client.PutConsumer(ctx, "o", client.ConsumerConfig{Ordering: "conversation"})
	require.NoError(t, err)
	_, steady, ordered, err = db.PullSteady(ctx, b.env.Pool, b.tenant, "o", 10)
	require.NoError(t, err)
	require.False(t, steady)
	require.True(t, ordered)
	pos, ranges := b.positions(t, "o")
	require.Zero(t, ranges)
	ds, err = b.client.Pull(ctx, "o", 10, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1, "the conversation's head")
	require.Equal(t, ids[0], ds[0].Message.ID)
	pos2, _ := b.positions(t, "o")
	require.Greater(t, pos2, pos)

	_, _, _, err = db.PullSteady(ctx, b.env.Pool, b.tenant, "missing", 10)
	require.ErrorIs(t, err, db.ErrNotFound)
}
