package consume_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
)

// TestGapFree: 8 writers commit messages in shuffled order, some holding
// their transactions open, while 4 pullers consume and ack. Every
// committed message is delivered exactly once (no lease expires: ack_wait
// is long) and none is skipped.
func TestGapFree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, err := b.client.PutConsumer(ctx, "agent", client.ConsumerConfig{AckWait: client.Duration(5 * time.Minute), MaxAckPending: 100000})
	require.NoError(t, err)

	var (
		mu        sync.Mutex
		committed = map[uuid.UUID]bool{}
		delivered = map[uuid.UUID]int{}
		writers   sync.WaitGroup
	)
	for w := range 8 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range 25 {
				var ids []uuid.UUID
				err := db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
					var err error
					n := 1 + r.IntN(4)
					texts := make([]string, n)
					for k := range texts {
						texts[k] = "m"
					}
					if ids, err = b.insertTx(tx, b.tenant, b.account, "c", texts...); err != nil {
						return err
					}
					// Hold some transactions open so later ones commit first.
					switch {
					case i%10 == 3:
						time.Sleep(time.Duration(200+r.IntN(300)) * time.Millisecond)
					default:
						time.Sleep(time.Duration(r.IntN(15)) * time.Millisecond)
					}
					return nil
				})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				mu.Lock()
				for _, id := range ids {
					committed[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	writersDone := make(chan struct{})
	go func() { writers.Wait(); close(writersDone) }()

	var pullers sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		pullers.Add(1)
		go func() {
			defer pullers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ds, err := b.client.Pull(ctx, "agent", 20, 100*time.Millisecond)
				if err != nil {
					t.Errorf("pull: %v", err)
					return
				}
				ids := make([]uuid.UUID, len(ds))
				mu.Lock()
				for i, d := range ds {
					delivered[d.Message.ID]++
					ids[i] = d.DeliveryID
					if d.DeliveryCount != 1 {
						t.Errorf("message %s redelivered (count %d)", d.Message.ID, d.DeliveryCount)
					}
				}
				mu.Unlock()
				if len(ids) > 0 {
					res, err := b.client.Ack(ctx, "agent", ids...)
					if err != nil {
						t.Errorf("ack: %v", err)
						return
					}
					for _, r := range res {
						if !r.OK {
							t.Errorf("ack %s: %s", r.DeliveryID, r.Error)
						}
					}
				}
			}
		}()
	}
	<-writersDone
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n, want := len(delivered), len(committed)
		mu.Unlock()
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			var cursor, horizon string
			_ = b.env.Pool.QueryRow(ctx, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, (SELECT string_agg(pid::text||':'||state||':'||coalesce(backend_xid::text,'-')||':'||left(query,60), ' | ') FROM pg_stat_activity WHERE backend_xid IS NOT NULL)").Scan(&horizon, &cursor)
			t.Fatalf("delivered %d of %d committed; horizon %s; xid holders: %s", n, want, horizon, cursor)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	pullers.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, committed)
	for id := range committed {
		require.Equal(t, 1, delivered[id], "message %s delivered %d times", id, delivered[id])
	}
	require.Len(t, delivered, len(committed), "nothing delivered that was not committed")
	info, err := b.client.GetConsumer(ctx, "agent")
	require.NoError(t, err)
	require.Zero(t, info.Stats.Pending)
	require.Zero(t, info.Stats.AckPending)
}

func TestLeaseLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "c", client.ConsumerConfig{AckWait: client.Duration(time.Second), MaxDeliver: 3})
	require.NoError(t, err)
	ids := b.insert(t, b.tenant, b.account, "conv", "a", "b", "c", "d")

	// Two pullers never hold the same lease. (A short wait, not 0: a
	// transaction of another test still running elsewhere in the cluster
	// may hold the snapshot horizon below these rows for a moment.)
	first, err := b.client.Pull(ctx, "c", 2, 10*time.Second)
	require.NoError(t, err)
	second, err := b.client.Pull(ctx, "c", 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, first, 2)
	require.Len(t, second, 2)
	seen := map[uuid.UUID]bool{}
	for _, d := range append(first, second...) {
		require.False(t, seen[d.Message.ID], "leased twice")
		seen[d.Message.ID] = true
	}
	require.Len(t, seen, 4)
	require.Equal(t, ids[0], first[0].Message.ID, "stream order")
	require.JSONEq(t, `{"n":0}`, string(first[0].Message.Raw), "raw payload travels with the message")

	byText := map[string]client.Delivery{}
	for _, d := range append(first, second...) {
		byText[d.Message.Text] = d
	}
	// a: ack. b: nak with delay. c: term. d: extend, then let it expire.
	res, err := b.client.Ack(ctx, "c", byText["a"].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	res, err = b.client.Ack(ctx, "c", byText["a"].DeliveryID)
	require.NoError(t, err)
	require.False(t, res[0].OK, "second ack of the same delivery is reported, not an error")

	res, err = b.client.Nak(ctx, "c", 1500*time.Millisecond, byText["b"].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	res, err = b.client.Term(ctx, "c", "poison", byText["c"].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	res, err = b.client.Extend(ctx, "c", byText["d"].DeliveryID, uuid.New())
	require.NoError(t, err)
	require.True(t, res[0].OK)
	require.False(t, res[1].OK, "unknown id reported per id")

	// Nothing is due right now.
	ds, err := b.client.Pull(ctx, "c", 10, 0)
	require.NoError(t, err)
	require.Empty(t, ds)

	// d's lease expires after ack_wait and b's nak delay passes: both come
	// back with delivery_count 2; c (terminated) never does.
	got := map[string]client.Delivery{}
	require.Eventually(t, func() bool {
		ds, err := b.client.Pull(ctx, "c", 10, 200*time.Millisecond)
		require.NoError(t, err)
		for _, d := range ds {
			got[d.Message.Text] = d
		}
		return len(got) == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 2, got["b"].DeliveryCount)
	require.Equal(t, 2, got["d"].DeliveryCount)
	require.NotEqual(t, byText["d"].DeliveryID, got["d"].DeliveryID, "a redelivery has a new delivery id")
	res, err = b.client.Ack(ctx, "c", byText["d"].DeliveryID)
	require.NoError(t, err)
	require.False(t, res[0].OK, "the expired lease's id no longer settles")

	// d: let it expire twice more: after max_deliver (3) it is dead.
	for want := 3; want <= 3; want++ {
		require.Eventually(t, func() bool {
			ds, err := b.client.Pull(ctx, "c", 10, 200*time.Millisecond)
			require.NoError(t, err)
			for _, d := range ds {
				if d.Message.Text == "d" {
					require.Equal(t, want, d.DeliveryCount)
					return true
				}
			}
			return false
		}, 10*time.Second, 10*time.Millisecond)
	}
	_, err = b.client.Ack(ctx, "c", got["b"].DeliveryID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ds, err := b.client.Pull(ctx, "c", 10, 200*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, ds, "d is dead-lettered after max_deliver, not redelivered")
		info, err := b.client.GetConsumer(ctx, "c")
		require.NoError(t, err)
		return info.Stats.Dead == 2
	}, 10*time.Second, 50*time.Millisecond)

	var reasons []string
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT last_error FROM mio.consumer_deliveries WHERE state = 'dead' ORDER BY pos")
		if err != nil {
			return err
		}
		reasons, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}))
	require.Equal(t, []string{"terminated: poison", "max_deliver exceeded"}, reasons)
}

// TestConversationOrdering: 3 conversations × 100 messages, 4 pullers
// acking in random order: each conversation is seen strictly in order,
// never two unsettled deliveries of one conversation, and conversations
// interleave.
func TestConversationOrdering(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, err := b.client.PutConsumer(ctx, "ordered", client.ConsumerConfig{Ordering: "conversation", AckWait: client.Duration(5 * time.Minute)})
	require.NoError(t, err)
	convs := []string{"c1", "c2", "c3"}
	want := map[string][]uuid.UUID{}
	for chunk := range 10 {
		for _, c := range convs {
			texts := make([]string, 10)
			for i := range texts {
				texts[i] = c
			}
			_ = chunk
			want[c] = append(want[c], b.insert(t, b.tenant, b.account, c, texts...)...)
		}
	}

	var (
		mu       sync.Mutex
		seen     = map[string][]uuid.UUID{}
		inFlight = map[string]int{}
		order    []string
		wg       sync.WaitGroup
	)
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for ctx.Err() == nil {
				mu.Lock()
				done := len(order) == 300
				mu.Unlock()
				if done {
					return
				}
				ds, err := b.client.Pull(ctx, "ordered", 5, 50*time.Millisecond)
				if err != nil {
					t.Errorf("pull: %v", err)
					return
				}
				mu.Lock()
				for _, d := range ds {
					c := d.Message.Conversation.ID
					inFlight[c]++
					if inFlight[c] > 1 {
						t.Errorf("two unsettled deliveries of %s", c)
					}
					seen[c] = append(seen[c], d.Message.ID)
					order = append(order, c)
				}
				mu.Unlock()
				r.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
				for _, d := range ds {
					time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
					mu.Lock()
					inFlight[d.Message.Conversation.ID]--
					mu.Unlock()
					if _, err := b.client.Ack(ctx, "ordered", d.DeliveryID); err != nil {
						t.Errorf("ack: %v", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range convs {
		require.Equal(t, want[c], seen[c], "conversation %s out of order", c)
	}
	switches := 0
	for i := 1; i < len(order); i++ {
		if order[i] != order[i-1] {
			switches++
		}
	}
	require.Greater(t, switches, 30, "conversations flow in parallel")
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	otherTenant, otherAccount, otherToken := b.newTenant(t, "consume", "read")
	other := client.New(b.srv.URL, otherToken)

	_, err := b.client.PutConsumer(ctx, "shared-name", client.ConsumerConfig{})
	require.NoError(t, err)
	mine := b.insert(t, b.tenant, b.account, "c", "mine")
	theirs := b.insert(t, otherTenant, otherAccount, "c", "theirs")

	_, err = other.GetConsumer(ctx, "shared-name")
	require.True(t, client.IsNotFound(err), "B cannot see A's consumer")
	_, err = other.Pull(ctx, "shared-name", 10, 0)
	require.True(t, client.IsNotFound(err))
	_, err = other.GetMessage(ctx, mine[0])
	require.True(t, client.IsNotFound(err), "B cannot read A's message")

	// B's consumer of the same name sees only B's messages.
	_, err = other.PutConsumer(ctx, "shared-name", client.ConsumerConfig{})
	require.NoError(t, err)
	ds, err := other.Pull(ctx, "shared-name", 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, theirs[0], ds[0].Message.ID)
	ds, err = b.client.Pull(ctx, "shared-name", 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, mine[0], ds[0].Message.ID)
	m, err := b.client.GetMessage(ctx, mine[0])
	require.NoError(t, err)
	require.Equal(t, "mine", m.Text)
}

func TestLongPollWakesOnCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "w", client.ConsumerConfig{})
	require.NoError(t, err)
	go func() {
		time.Sleep(100 * time.Millisecond)
		b.insert(t, b.tenant, b.account, "c", "late")
		b.hub.Publish(b.tenant) // what the ingester does after commit
	}()
	start := time.Now()
	ds, err := b.client.Pull(ctx, "w", 10, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Less(t, time.Since(start), 20*time.Second, "the waiting pull returned on the commit, not at the end of its wait")

	// An empty wait returns an empty list, 200.
	ds, err = b.client.Pull(ctx, "w", 10, 50*time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, ds)
}
