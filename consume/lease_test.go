package consume_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
)

// leaseRows counts a consumer's outstanding lease ranges (some member
// neither acknowledged nor moved out) and its per-message deliveries by
// state. Ranges are append-only: a settled range stays
// until its generation is retired, so "gone" means "nothing outstanding".
func (b *testBundle) leaseRows(t *testing.T, consumer string) (ranges int, perMessage map[string]int) {
	t.Helper()
	perMessage = map[string]int{}
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		if err := tx.QueryRow(context.Background(), `SELECT count(*) FROM mio.consumer_leases AS r
			WHERE r.consumer_name = $1 AND cardinality(r.message_ids) > coalesce((
			    SELECT sum(cardinality(s.idxs)) FROM mio.consumer_settles AS s
			    WHERE s.consumer_name = r.consumer_name AND s.lease_id = r.id), 0)`, consumer).Scan(&ranges); err != nil {
			return err
		}
		rows, err := tx.Query(context.Background(), "SELECT state, count(*)::int FROM mio.consumer_deliveries WHERE consumer_name = $1 GROUP BY state", consumer)
		if err != nil {
			return err
		}
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				return err
			}
			perMessage[s] = n
		}
		return rows.Err()
	}))
	return ranges, perMessage
}

func deliveryIDs(ds []client.Delivery) []uuid.UUID {
	out := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		out[i] = d.DeliveryID
	}
	return out
}

// TestLeaseRanges: a pulled batch is ONE lease-range row and no
// per-message rows; partial acks keep the range, the last ack settles it;
// an expired range's outstanding members are redelivered with new ids
// (the old ones no longer settle) and dead-lettered after max_deliver.
func TestLeaseRanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "r", client.ConsumerConfig{AckWait: client.Duration(time.Second), MaxDeliver: 2})
	require.NoError(t, err)
	b.insert(t, b.tenant, b.account, "conv", "m0", "m1", "m2", "m3", "m4")

	ds, err := b.client.Pull(ctx, "r", 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 5)
	lease0, _, ok := consume.ParseDeliveryID(ds[0].DeliveryID)
	require.True(t, ok)
	for i, d := range ds {
		l, idx, ok := consume.ParseDeliveryID(d.DeliveryID)
		require.True(t, ok)
		require.Equal(t, lease0, l, "one range per pull")
		require.Equal(t, i, idx, "members in stream order")
		require.Equal(t, 1, d.DeliveryCount)
	}
	ranges, per := b.leaseRows(t, "r")
	require.Equal(t, 1, ranges)
	require.Empty(t, per, "the happy path writes no per-message rows")
	info, err := b.client.GetConsumer(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, int64(5), info.Stats.AckPending)

	// Partial ack: the range stays with three outstanding.
	res, err := b.client.Ack(ctx, "r", ds[0].DeliveryID, ds[1].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK && res[1].OK)
	res, err = b.client.Ack(ctx, "r", ds[1].DeliveryID, db.LeaseDeliveryID(lease0, 4000), db.LeaseDeliveryID(lease0+1000, 0))
	require.NoError(t, err)
	require.False(t, res[0].OK, "acked twice")
	require.False(t, res[1].OK, "no such member")
	require.False(t, res[2].OK, "no such range")
	ranges, per = b.leaseRows(t, "r")
	require.Equal(t, 1, ranges)
	require.Empty(t, per)
	info, err = b.client.GetConsumer(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, int64(3), info.Stats.AckPending)

	// The range expires: its three outstanding members come back with
	// delivery_count 2 and new (random) delivery ids.
	var again []client.Delivery
	require.Eventually(t, func() bool {
		got, err := b.client.Pull(ctx, "r", 10, 200*time.Millisecond)
		require.NoError(t, err)
		again = append(again, got...)
		return len(again) >= 3
	}, 10*time.Second, 10*time.Millisecond)
	require.Len(t, again, 3)
	for i, d := range again {
		require.Equal(t, ds[i+2].Message.ID, d.Message.ID, "redelivered in stream order")
		require.Equal(t, 2, d.DeliveryCount)
		_, _, isRange := consume.ParseDeliveryID(d.DeliveryID)
		require.False(t, isRange)
	}
	res, err = b.client.Ack(ctx, "r", ds[2].DeliveryID)
	require.NoError(t, err)
	require.False(t, res[0].OK, "the expired range's id no longer settles")
	ranges, per = b.leaseRows(t, "r")
	require.Equal(t, 0, ranges, "an expired range has nothing outstanding")
	require.Equal(t, map[string]int{"leased": 3}, per)

	// Ack one redelivery; the other two expire again: max_deliver 2 → dead.
	res, err = b.client.Ack(ctx, "r", again[0].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	require.Eventually(t, func() bool {
		got, err := b.client.Pull(ctx, "r", 10, 100*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, got, "dead after max_deliver, not redelivered")
		info, err := b.client.GetConsumer(ctx, "r")
		require.NoError(t, err)
		return info.Stats.Dead == 2
	}, 10*time.Second, 20*time.Millisecond)
	ranges, per = b.leaseRows(t, "r")
	require.Equal(t, 0, ranges)
	require.Equal(t, map[string]int{"dead": 2}, per)
}

// TestLeaseRangeWholeAck: acking a whole batch deletes its range and
// leaves nothing behind; max_deliver 1 dead-letters an expired range's
// members without a redelivery.
func TestLeaseRangeWholeAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "w", client.ConsumerConfig{AckWait: client.Duration(time.Second), MaxDeliver: 1})
	require.NoError(t, err)
	texts := make([]string, 150)
	for i := range texts {
		texts[i] = "x"
	}
	b.insert(t, b.tenant, b.account, "conv", texts...)
	ds, err := b.client.Pull(ctx, "w", 100, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 100)
	res, err := b.client.Ack(ctx, "w", deliveryIDs(ds)...)
	require.NoError(t, err)
	for _, r := range res {
		require.True(t, r.OK)
	}
	ranges, per := b.leaseRows(t, "w")
	require.Equal(t, 0, ranges)
	require.Empty(t, per)

	rest, err := b.client.Pull(ctx, "w", 100, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, rest, 50)
	require.Eventually(t, func() bool {
		got, err := b.client.Pull(ctx, "w", 100, 100*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, got, "max_deliver 1: never redelivered")
		_, per := b.leaseRows(t, "w")
		return per["dead"] == 50
	}, 10*time.Second, 20*time.Millisecond)
}

// TestLeaseRangeMembersMoveOut: a nak, term or extend of one member moves
// it alone out of its range; its id keeps working for later settles; the
// rest of the range is untouched.
func TestLeaseRangeMembersMoveOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "m", client.ConsumerConfig{AckWait: client.Duration(time.Minute)})
	require.NoError(t, err)
	b.insert(t, b.tenant, b.account, "conv", "n", "t", "e", "k")
	ds, err := b.client.Pull(ctx, "m", 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 4)

	res, err := b.client.Extend(ctx, "m", ds[2].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	res, err = b.client.Extend(ctx, "m", ds[2].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK, "a moved-out member extends again")
	res, err = b.client.Nak(ctx, "m", time.Hour, ds[0].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	res, err = b.client.Term(ctx, "m", "bad", ds[1].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	ranges, per := b.leaseRows(t, "m")
	require.Equal(t, 1, ranges, "member k is still in its range")
	require.Equal(t, map[string]int{"pending": 1, "dead": 1, "leased": 1}, per)
	info, err := b.client.GetConsumer(ctx, "m")
	require.NoError(t, err)
	require.Equal(t, int64(2), info.Stats.AckPending, "e (moved out) and k (in the range)")

	res, err = b.client.Ack(ctx, "m", ds[2].DeliveryID, ds[3].DeliveryID, ds[0].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK, "the extended member acks by the same id")
	require.True(t, res[1].OK)
	require.False(t, res[2].OK, "a nak'd delivery no longer settles")
	ranges, per = b.leaseRows(t, "m")
	require.Equal(t, 0, ranges, "the range is done once every member is settled or moved out")
	require.Equal(t, map[string]int{"pending": 1, "dead": 1}, per)
}

// TestOrderingSwitchTakesRangesIntoAccount: a consumer switched from
// ordering none to conversation keeps the leases it handed out as ranges
// and does not deliver the next message of a conversation until they are
// settled.
func TestOrderingSwitchTakesRangesIntoAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "s", client.ConsumerConfig{AckWait: client.Duration(time.Minute)})
	require.NoError(t, err)
	b.insert(t, b.tenant, b.account, "conv", "a", "b")
	ds, err := b.client.Pull(ctx, "s", 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 2)

	_, err = b.client.PutConsumer(ctx, "s", client.ConsumerConfig{AckWait: client.Duration(time.Minute), Ordering: "conversation"})
	require.NoError(t, err)
	b.insert(t, b.tenant, b.account, "conv", "c")
	got, err := b.client.Pull(ctx, "s", 10, 300*time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, got, "the conversation has unsettled deliveries")
	ranges, per := b.leaseRows(t, "s")
	require.Equal(t, 0, ranges, "the ranges became per-message leases")
	require.Equal(t, map[string]int{"leased": 2, "pending": 1}, per)

	res, err := b.client.Ack(ctx, "s", deliveryIDs(ds)...)
	require.NoError(t, err)
	require.True(t, res[0].OK && res[1].OK, "range ids still settle after the move")
	got, err = b.client.Pull(ctx, "s", 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "c", got[0].Message.Text)

	// Deleting the consumer takes its ranges with it.
	b.insert(t, b.tenant, b.account, "other", "d")
	_, err = b.client.PutConsumer(ctx, "s2", client.ConsumerConfig{})
	require.NoError(t, err)
	ds2, err := b.client.Pull(ctx, "s2", 10, 10*time.Second)
	require.NoError(t, err)
	require.NotEmpty(t, ds2)
	require.NoError(t, b.client.DeleteConsumer(ctx, "s2"))
	ranges, per = b.leaseRows(t, "s2")
	require.Equal(t, 0, ranges)
	require.Empty(t, per)
}
