package consume_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
)

// pullIDs pulls once (waiting up to wait), acks what came, and returns the
// message ids in delivery order.
func (b *testBundle) pullIDs(t *testing.T, consumer string, wait time.Duration) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	ds, err := b.client.Pull(ctx, consumer, 100, wait)
	require.NoError(t, err)
	ids := make([]uuid.UUID, len(ds))
	dids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i], dids[i] = d.Message.ID, d.DeliveryID
	}
	if len(dids) > 0 {
		_, err := b.client.Ack(ctx, consumer, dids...)
		require.NoError(t, err)
	}
	return ids
}

// drainIDs pulls (acking) until want messages came or the deadline passed.
func (b *testBundle) drainIDs(t *testing.T, consumer string, want int, within time.Duration) []uuid.UUID {
	t.Helper()
	var got []uuid.UUID
	deadline := time.Now().Add(within)
	for len(got) < want && time.Now().Before(deadline) {
		got = append(got, b.pullIDs(t, consumer, 100*time.Millisecond)...)
	}
	return got
}

// insertReceived commits a message in the received state (attachments not
// settled yet).
func (b *testBundle) insertReceived(t *testing.T, conv string) (uuid.UUID, []byte) {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	env, _ := json.Marshal(envelope.Message{ID: id, TenantID: b.tenant, AccountID: b.account, ChannelType: "webhook",
		SourceMessageID: id.String(), Conversation: envelope.Conversation{ID: conv, Type: "dm"}, Attachments: []envelope.Attachment{}})
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.InboxInsertBatch(context.Background(), tx, b.tenant, []db.InboxRow{{ID: id, AccountID: b.account,
			ChannelType: "webhook", SourceMessageID: id.String(), ConversationID: conv, State: db.InboxReceived,
			Envelope: env, ReceivedAt: time.Now()}})
		return err
	}))
	return id, env
}

// A writing transaction held open — in MIO's database or in another
// database of the same cluster — does not hold back delivery: messages
// committed meanwhile are delivered at once. Rows the held transaction
// writes itself (a new message, a message made ready) are delivered once
// it commits, exactly once. Reverting the readers to the snapshot-xmin rule
// makes this test fail (docs/architecture.md, "Reading the log").
func TestHeldTransactionDoesNotHoldBackDelivery(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"same database", "other database"} {
		for _, stage := range []string{"ready", "received"} {
			t.Run(where+"/"+stage, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				ctx := context.Background()
				_, err := b.client.PutConsumer(ctx, "c", client.ConsumerConfig{Stage: stage, AckWait: client.Duration(5 * time.Minute)})
				require.NoError(t, err)
				toReady, toReadyEnv := b.insertReceived(t, "r")

				// The held transaction takes an XID first, before anything
				// below commits.
				var held pgx.Tx
				if where == "same database" {
					held, err = db.BeginTenant(ctx, b.env.Pool, b.tenant)
					require.NoError(t, err)
				} else {
					other := dbtest.NewWith(t, dbtest.Options{Empty: true})
					conn, err := pgx.Connect(ctx, other.OwnerURL)
					require.NoError(t, err)
					t.Cleanup(func() { _ = conn.Close(context.Background()) })
					held, err = conn.Begin(ctx)
					require.NoError(t, err)
					_, err = held.Exec(ctx, "CREATE TEMP TABLE w (x int)")
					require.NoError(t, err)
				}
				defer held.Rollback(ctx) //nolint:errcheck
				_, err = held.Exec(ctx, "SELECT pg_current_xact_id()")
				require.NoError(t, err)

				first := b.insert(t, b.tenant, b.account, "a", "1", "2", "3")
				if stage == "received" {
					first = append(first, toReady) // on the received stage from its insert
				}
				start := time.Now()
				got := b.drainIDs(t, "c", len(first), 5*time.Second)
				require.ElementsMatch(t, first, got, "committed messages are delivered while an older transaction is open")
				require.Less(t, time.Since(start), 3*time.Second)

				var own []uuid.UUID
				if where == "same database" {
					own, err = b.insertTx(held, b.tenant, b.account, "held", "h1", "h2")
					require.NoError(t, err)
					ok, err := db.InboxSettle(ctx, held, b.tenant, toReady, toReadyEnv)
					require.NoError(t, err)
					require.True(t, ok)
					if stage == "ready" {
						own = append(own, toReady)
					}
				}
				second := b.insert(t, b.tenant, b.account, "a", "4")
				got = b.drainIDs(t, "c", 1, 5*time.Second)
				require.Equal(t, second, got, "only what committed is delivered; the held rows are not visible yet")

				require.NoError(t, held.Commit(ctx))
				got = b.drainIDs(t, "c", len(own), 5*time.Second)
				require.ElementsMatch(t, own, got, "the held transaction's rows are delivered once it commits")
				require.Empty(t, b.pullIDs(t, "c", 300*time.Millisecond), "and exactly once")
			})
		}
	}
}

// With ordering conversation, a conversation's order follows commit order:
// a message written by a transaction held open joins its conversation when
// it commits, after the messages of that conversation that committed
// before it, and at most one delivery per conversation is unsettled. Other
// conversations flow meanwhile.
func TestHeldTransactionConversationOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "o", client.ConsumerConfig{Ordering: "conversation", AckWait: client.Duration(5 * time.Minute)})
	require.NoError(t, err)

	held, err := db.BeginTenant(ctx, b.env.Pool, b.tenant)
	require.NoError(t, err)
	defer held.Rollback(ctx) //nolint:errcheck
	heldIDs, err := b.insertTx(held, b.tenant, b.account, "C", "c-held")
	require.NoError(t, err)

	c1 := b.insert(t, b.tenant, b.account, "C", "c1")
	d1 := b.insert(t, b.tenant, b.account, "D", "d1")
	c2 := b.insert(t, b.tenant, b.account, "C", "c2")
	d2 := b.insert(t, b.tenant, b.account, "D", "d2")

	pull := func() map[string]client.Delivery {
		ds, err := b.client.Pull(ctx, "o", 10, time.Second)
		require.NoError(t, err)
		out := map[string]client.Delivery{}
		for _, d := range ds {
			_, dup := out[d.Message.Conversation.ID]
			require.False(t, dup, "two unsettled deliveries of %s", d.Message.Conversation.ID)
			out[d.Message.Conversation.ID] = d
		}
		return out
	}
	ack := func(ds ...client.Delivery) {
		for _, d := range ds {
			_, err := b.client.Ack(ctx, "o", d.DeliveryID)
			require.NoError(t, err)
		}
	}
	heads := pull()
	require.Equal(t, c1[0], heads["C"].Message.ID)
	require.Equal(t, d1[0], heads["D"].Message.ID)
	ack(heads["C"], heads["D"])
	heads = pull()
	require.Equal(t, c2[0], heads["C"].Message.ID)
	require.Equal(t, d2[0], heads["D"].Message.ID)
	ack(heads["C"], heads["D"])
	require.Empty(t, pull(), "the held message is not visible yet")

	require.NoError(t, held.Commit(ctx))
	heads = pull()
	require.Len(t, heads, 1)
	require.Equal(t, heldIDs[0], heads["C"].Message.ID, "delivered once its transaction commits")
	ack(heads["C"])
	require.Empty(t, pull(), "exactly once")
}

// The backlog (stats.pending: what the consumer has not taken) counts the
// rows of a transaction that was running when the consumer's window began
// once it commits, and rows committed after the window, but not what was
// read: the held transaction's count delta becomes visible with its rows.
func TestBacklogCountsRowsOfHeldTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "c", client.ConsumerConfig{AckWait: client.Duration(5 * time.Minute)})
	require.NoError(t, err)
	pending := func() int64 {
		t.Helper()
		info, err := b.client.GetConsumer(ctx, "c")
		require.NoError(t, err)
		return info.Stats.Pending
	}

	held, err := db.BeginTenant(ctx, b.env.Pool, b.tenant)
	require.NoError(t, err)
	defer held.Rollback(ctx) //nolint:errcheck
	own, err := b.insertTx(held, b.tenant, b.account, "held", "h1", "h2")
	require.NoError(t, err)

	first := b.insert(t, b.tenant, b.account, "a", "1", "2", "3")
	require.Equal(t, int64(3), pending())
	require.ElementsMatch(t, first, b.drainIDs(t, "c", len(first), 5*time.Second))
	require.Zero(t, pending(), "read; the held rows are not visible")

	b.insert(t, b.tenant, b.account, "a", "4", "5", "6", "7")
	require.Equal(t, int64(4), pending(), "committed after the window")
	require.NoError(t, held.Commit(ctx))
	require.Equal(t, int64(4+len(own)), pending(), "and the held transaction's rows once it commits")
	require.Len(t, b.drainIDs(t, "c", 4+len(own), 5*time.Second), 4+len(own))
	require.Zero(t, pending())
}
