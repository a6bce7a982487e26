package bridge_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/bridge"
	"github.com/miohq/mio/db"
)

// checkExactlyOnce compares the stream's messages with the inbox ids:
// every message once on mio.inbound and once on mio.inbound_enriched,
// nothing else.
func checkExactlyOnce(t *testing.T, b *bundle, ids []uuid.UUID) {
	t.Helper()
	b.waitMsgs(t, bridge.DefaultStream, uint64(2*len(ids)))
	got, _, _ := b.streamMsgs(t, bridge.DefaultStream)
	want := map[string]int{}
	for _, id := range ids {
		want[bridge.MsgID(db.BridgeInbound, id.String())] = 1
		want[bridge.MsgID(db.BridgeInboundEnriched, id.String())] = 1
	}
	require.Equal(t, want, got)
}

// Writers commit in shuffled order (transactions of small xids commit
// after those of larger ones) while the bridge publishes: every message
// reaches the stream exactly once.
func TestExactlyOnceUnderShuffledCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	br, m := b.newBridge(t, bridge.Config{MaxPending: 64})
	run(t, br)

	const writers, rounds, per = 6, 8, 25
	var (
		mu  sync.Mutex
		ids []uuid.UUID
		wg  sync.WaitGroup
	)
	for range rounds {
		// Open every writer's transaction (xids in order), then commit
		// them in random order.
		txs := make([]func(), writers)
		for w := range writers {
			tx, err := db.BeginTenant(ctx, b.env.Pool, b.tenant)
			require.NoError(t, err)
			got, err := db.InboxInsertBatch(ctx, tx, b.tenant, b.rows(per))
			require.NoError(t, err)
			txs[w] = func() {
				defer wg.Done()
				require.NoError(t, tx.Commit(ctx))
				mu.Lock()
				ids = append(ids, got...)
				mu.Unlock()
			}
		}
		wg.Add(writers)
		for _, i := range rand.Perm(writers) {
			go txs[i]()
		}
		wg.Wait()
	}
	require.Len(t, ids, writers*rounds*per)
	checkExactlyOnce(t, b, ids)
	waitCount(t, m.Published.WithLabelValues("inbound", "published"), len(ids))
	require.Zero(t, testutil.ToFloat64(m.Published.WithLabelValues("inbound", "duplicate")))
}

// A bridge dies after JetStream acknowledged a batch and before its
// position advanced (kill -9 there): the next one republishes the batch,
// JetStream drops the duplicates, nothing is missing.
func TestCrashBeforeAdvance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []uuid.UUID
	for range 4 {
		ids = append(ids, b.insert(t, b.rows(100))...)
	}
	crashed, release := make(chan struct{}), make(chan struct{})
	var batches atomic.Int32
	first, _ := b.newBridge(t, bridge.Config{MaxPending: 300, BatchRows: 150})
	first.SetAfterAcks(func(_ uuid.UUID, s db.BridgeStream) error {
		if s == db.BridgeInbound && batches.Add(1) == 2 {
			close(crashed)
			<-release // dead: never advances
			return errors.New("dead")
		}
		return nil
	})
	run(t, first)
	t.Cleanup(func() { close(release) }) // runs before run's cleanup
	<-crashed
	// The first bridge's session ends as a killed process's would: its
	// lock is released while its reader stays stuck.
	b.terminate(t, first.LockSessionPID())

	ids = append(ids, b.insert(t, b.rows(50))...)
	second, m := b.newBridge(t, bridge.Config{MaxPending: 300, BatchRows: 150})
	run(t, second)
	checkExactlyOnce(t, b, ids)
	// The batch acknowledged before the crash is republished and dropped.
	waitCount(t, m.Published.WithLabelValues("inbound", "duplicate"), 150)
}

// NATS stops for -nats.down (30 s) while ingest goes on: the backlog
// stays in PostgreSQL, /readyz's check fails, and once NATS is back the
// bridge catches up and everything is published once.
func TestNATSDownThenBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br, m := b.newBridge(t, bridge.Config{MaxPending: 64})
	run(t, br)
	ids := b.insert(t, b.rows(100))
	b.waitMsgs(t, bridge.DefaultStream, 200)
	require.NoError(t, br.Ready())

	b.nats.stop()
	require.Eventually(t, func() bool { return br.Ready() != nil }, 10*time.Second, 10*time.Millisecond)
	// Ingest goes on through the outage: a chunk every tenth of it.
	const chunks = 10
	tick := time.NewTicker(*natsDown / chunks)
	defer tick.Stop()
	for range chunks {
		ids = append(ids, b.insert(t, b.rows(40))...)
		<-tick.C
	}
	require.Error(t, br.Ready(), "still down at the end of the outage")
	require.Equal(t, 200.0, testutil.ToFloat64(m.Published.WithLabelValues("inbound", "published"))+
		testutil.ToFloat64(m.Published.WithLabelValues("inbound_enriched", "published")), "nothing published while down")
	b.nats.start()
	checkExactlyOnce(t, b, ids)
	require.Eventually(t, func() bool { return br.Ready() == nil }, 10*time.Second, 10*time.Millisecond)
	require.Zero(t, testutil.ToFloat64(m.Published.WithLabelValues("inbound", "error")))
}

// Two bridges: one holds the tenant and publishes, the other stands by
// and takes over once the first one's session ends.
func TestTwoBridgesOnePublishes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one, m1 := b.newBridge(t, bridge.Config{})
	stop1 := run(t, one)
	ids := b.insert(t, b.rows(30))
	b.waitMsgs(t, bridge.DefaultStream, 60)
	two, m2 := b.newBridge(t, bridge.Config{})
	run(t, two)
	ids = append(ids, b.insert(t, b.rows(30))...)
	b.waitMsgs(t, bridge.DefaultStream, 120)
	waitCount(t, m1.Published.WithLabelValues("inbound", "published"), 60)
	require.Zero(t, testutil.ToFloat64(m2.Published.WithLabelValues("inbound", "published")), "the standby published")

	stop1()
	ids = append(ids, b.insert(t, b.rows(30))...)
	checkExactlyOnce(t, b, ids)
	waitCount(t, m2.Published.WithLabelValues("inbound", "published"), 30)
}

// Conversation ids with subject syntax stay one token each.
func TestHostileConversationIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hostile := []string{"a.b", "*", ">", "with space", "tab\there", "%41", "ü.>", "a..b", "$JS.API", "\x01"}
	ids := b.insert(t, b.rows(len(hostile), hostile...))
	br, _ := b.newBridge(t, bridge.Config{})
	run(t, br)
	checkExactlyOnce(t, b, ids)
	_, subjects, headers := b.streamMsgs(t, bridge.DefaultStream)
	convs := map[string]bool{}
	for i, s := range subjects {
		tokens := strings.Split(s, ".")
		require.Len(t, tokens, 6, s)
		require.Contains(t, []string{"inbound", "inbound_enriched"}, tokens[1])
		require.Equal(t, "webhook", tokens[2])
		require.Equal(t, b.account.String(), tokens[3])
		require.NotContains(t, tokens[4], " ")
		require.Equal(t, b.tenant.String(), headers[i].Get(bridge.HeaderTenantID))
		require.Equal(t, "webhook", headers[i].Get(bridge.HeaderChannelType))
		convs[tokens[4]] = true
	}
	for _, c := range hostile {
		require.True(t, convs[bridge.Token(c)], "conversation %q as %q", c, bridge.Token(c))
	}
	require.Len(t, convs, len(hostile), "escaping is one-to-one")
}

// An existing stream that cannot take MIO's events is refused at start
// with a message that names the problem.
func TestStreamMismatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	js, err := jetstream.New(b.connect(t))
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>", "mio.outbound_cmd.*"}, Duplicates: time.Second})
	require.NoError(t, err)
	br, _ := b.newBridge(t, bridge.Config{Stream: "OTHER"})
	err = br.CheckStream(ctx)
	var mismatch *bridge.StreamMismatchError
	require.ErrorAs(t, err, &mismatch)
	require.Contains(t, err.Error(), "do not take mio.inbound.>")
	require.Contains(t, err.Error(), "duplicate window 1s is shorter")
	require.Contains(t, err.Error(), "take mio.outbound_cmd.>")
	require.Error(t, br.Ready())

	// A stream MIO creates is fine, and reused as is.
	ok, _ := b.newBridge(t, bridge.Config{Stream: "MINE", DuplicateWindow: time.Minute})
	require.NoError(t, ok.CheckStream(ctx))
	again, _ := b.newBridge(t, bridge.Config{Stream: "MINE", DuplicateWindow: time.Minute})
	require.NoError(t, again.CheckStream(ctx))
	s, err := js.Stream(ctx, "MINE")
	require.NoError(t, err)
	require.Equal(t, time.Minute, s.CachedInfo().Config.Duplicates)
	require.Equal(t, jetstream.FileStorage, s.CachedInfo().Config.Storage)
}

// A tenant that opted out is not published; the others are.
func TestTenantOptOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	other := b.otherTenant(t)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return db.BridgePublishSet(ctx, tx, b.tenant, false)
	}))
	b.insert(t, b.rows(10))
	ids := other.insert(t, other.rows(10))
	br, _ := b.newBridge(t, bridge.Config{})
	run(t, br)
	// The published tenant's messages are the signal that claims ran.
	checkExactlyOnce(t, b, ids)
}

// waitCount waits for a counter to reach want (the stream holds the
// messages already; their acks are on their way to the bridge), then
// checks it did not pass it.
func waitCount(t *testing.T, c prometheus.Collector, want int) {
	t.Helper()
	require.Eventually(t, func() bool { return testutil.ToFloat64(c) >= float64(want) }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, float64(want), testutil.ToFloat64(c))
}

// A tenant that opts out while it is published is let go: its lock is
// released and what it receives next is not published.
func TestTenantOptOutWhilePublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	other := b.otherTenant(t)
	br, _ := b.newBridge(t, bridge.Config{})
	run(t, br)
	ids := b.insert(t, b.rows(5))
	checkExactlyOnce(t, b, ids)

	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return db.BridgePublishSet(ctx, tx, b.tenant, false)
	}))
	// The bridge let go once this session can take the tenant's lock.
	conn, err := b.env.Pool.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(conn.Release)
	require.Eventually(t, func() bool {
		locked, err := db.BridgeTryLock(ctx, conn, []uuid.UUID{b.tenant})
		require.NoError(t, err)
		return len(locked) == 1
	}, 30*time.Second, 20*time.Millisecond)
	defer db.BridgeUnlock(ctx, conn, b.tenant) //nolint:errcheck

	b.insert(t, b.rows(5))
	otherIDs := other.insert(t, other.rows(5))
	// The other tenant's messages are the signal that the bridge went on.
	checkExactlyOnce(t, b, append(ids, otherIDs...))
}
