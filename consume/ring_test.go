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

// consumerTableWrites sums, over mio.consumers and every partition of
// the consumers' append-only tables, the rows inserted and the rows
// updated or deleted (each update or delete leaves a dead tuple).
func (b *testBundle) consumerTableWrites(t *testing.T) (ins, updDel int64) {
	t.Helper()
	require.NoError(t, b.env.Pool.QueryRow(context.Background(), `
		SELECT coalesce(sum(n_tup_ins), 0)::bigint, coalesce(sum(n_tup_upd + n_tup_del), 0)::bigint
		FROM pg_stat_user_tables
		WHERE schemaname = 'mio' AND (relname = 'consumers' OR relname ~ '^consumer_(leases|settles|positions)_[0-9]$')`).
		Scan(&ins, &updDel))
	return ins, updDel
}

// TestPullAckAppendOnly: the steady state of a consumer — pull a batch,
// ack it — only appends rows (a lease range, a settle row, a position):
// no row of the consumers' bookkeeping is updated or deleted, so nothing
// is left for vacuum, whatever holds the cluster's horizon. (Not
// parallel: the statistics are per database and must see only this.)
func TestPullAckAppendOnly(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "a", client.ConsumerConfig{})
	require.NoError(t, err)
	_, err = b.client.Pull(ctx, "a", 10, 0) // the consumer's first position
	require.NoError(t, err)

	ins0, upd0 := b.consumerTableWrites(t)
	const cycles = 30
	for i := range cycles {
		b.insert(t, b.tenant, b.account, "c", "x", "y")
		ds, err := b.client.Pull(ctx, "a", 10, 0)
		require.NoError(t, err)
		require.Len(t, ds, 2, "cycle %d", i)
		res, err := b.client.Ack(ctx, "a", deliveryIDs(ds)...)
		require.NoError(t, err)
		for _, r := range res {
			require.True(t, r.OK)
		}
	}
	// Statistics reach the shared counters a little after each commit:
	// wait until every cycle's inserts (range, settle, position) show.
	var ins, upd int64
	require.Eventually(t, func() bool {
		_, _ = b.env.Pool.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		ins, upd = b.consumerTableWrites(t)
		return ins-ins0 >= 3*cycles
	}, 15*time.Second, 100*time.Millisecond, "inserts of %d cycles not seen", cycles)
	require.Zero(t, upd-upd0, "pull and ack updated or deleted %d rows (dead tuples)", upd-upd0)
}

// TestConsumerRingRetiresGenerations: stepping the ring through every
// generation retires (TRUNCATEs) the ones written before, and nothing is
// lost or delivered twice: a range still outstanding in a retired
// generation moves out into per-message leases that its delivery ids
// still settle, and an idle consumer keeps its position (its newest
// position row is copied into its own row before the truncate).
func TestConsumerRingRetiresGenerations(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	for _, name := range []string{"busy", "idle"} {
		_, err := b.client.PutConsumer(ctx, name, client.ConsumerConfig{AckWait: client.Duration(time.Minute)})
		require.NoError(t, err)
	}
	ids := b.insert(t, b.tenant, b.account, "c", "m0", "m1", "m2", "m3")

	seen := map[string]map[uuid.UUID]int{"busy": {}, "idle": {}}
	pull := func(name string, n int) []client.Delivery {
		t.Helper()
		ds, err := b.client.Pull(ctx, name, n, 0)
		require.NoError(t, err)
		for _, d := range ds {
			seen[name][d.Message.ID]++
		}
		return ds
	}
	// idle takes everything and goes quiet; busy leaves a range outstanding.
	took := pull("idle", 10)
	require.Len(t, took, 4)
	_, err := b.client.Ack(ctx, "idle", deliveryIDs(took)...)
	require.NoError(t, err)
	outstanding := pull("busy", 2)
	require.Len(t, outstanding, 2)

	// Step the ring (period 0: advance whenever the next generation is
	// clean) until every generation has been retired at least once.
	retired := map[int16]bool{}
	for step := 0; len(retired) < 3; step++ {
		require.Less(t, step, 20, "the ring does not turn")
		st, err := db.ConsumerRingStep(ctx, b.env.Pool, 0)
		require.NoError(t, err)
		if st.Retired >= 0 {
			retired[st.Retired] = true
		}
		// Keep appending to whatever generation is current.
		ds := pull("busy", 1)
		if len(ds) > 0 {
			_, err := b.client.Ack(ctx, "busy", deliveryIDs(ds)...)
			require.NoError(t, err)
		}
	}

	// The range that was outstanding when its generation was retired is
	// still settled by its delivery ids.
	res, err := b.client.Ack(ctx, "busy", deliveryIDs(outstanding)...)
	require.NoError(t, err)
	for _, r := range res {
		require.True(t, r.OK, "delivery %s of a retired generation no longer settles: %s", r.DeliveryID, r.Error)
	}
	// Nothing comes again; new messages reach both consumers once.
	more := b.insert(t, b.tenant, b.account, "c", "m4")
	require.Len(t, pull("idle", 10), 1)
	for range 3 {
		pull("busy", 10)
	}
	for _, name := range []string{"busy", "idle"} {
		for _, id := range append(ids, more...) {
			require.Equal(t, 1, seen[name][id], "%s: message %s delivered %d times", name, id, seen[name][id])
		}
	}
	// The generation the outstanding range was written to is gone.
	leaseID, _, ok := consume.ParseDeliveryID(outstanding[0].DeliveryID)
	require.True(t, ok)
	var rows int
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT count(*) FROM mio.consumer_leases WHERE id = $1", leaseID).Scan(&rows)
	}))
	require.Zero(t, rows, "the retired generation's ranges are truncated")
}
