package notify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/notify"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestLocalWakeIsImmediateAndScoped(t *testing.T) {
	t.Parallel()
	h := notify.New(nil, nil, notify.Options{})
	a, b := uuid.New(), uuid.New()
	subA := h.Subscribe(a)
	defer subA.Close()
	subB := h.Subscribe(b)
	defer subB.Close()
	h.Publish(a)
	select {
	case <-subA.C:
	default:
		t.Fatal("a same-process publish must wake at once")
	}
	select {
	case <-subB.C:
		t.Fatal("another tenant's subscriber must not wake")
	default:
	}
	// Wake-ups coalesce: many publishes, one pending signal.
	for range 10 {
		h.Publish(a)
	}
	<-subA.C
	select {
	case <-subA.C:
		t.Fatal("signals coalesce")
	default:
	}
}

// Two hubs on two pools stand for two processes: a publish in one wakes
// the other's subscribers through LISTEN/NOTIFY (debounced).
func TestCrossProcessWake(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Both pools connect straight to PostgreSQL (env.Pool may go through
	// PgBouncer, where only ListenURL can LISTEN: the next test): a hub
	// that cannot hear its peers' hellos sends nothing.
	open := func() *pgxpool.Pool {
		p, err := db.Open(ctx, env.OwnerURL, db.PoolOptions{MaxConns: 4, RuntimeRole: dbtest.RuntimeRole})
		require.NoError(t, err)
		t.Cleanup(p.Close)
		return p
	}
	requireCrossWake(t, ctx, notify.New(open(), nil, notify.Options{}), notify.New(open(), nil, notify.Options{}))
}

// TestCrossProcessWakeListenURL: with ListenURL each hub LISTENs on its
// own direct connection, so both may use a pool behind a transaction
// pooler (MIO_TEST_PGBOUNCER=1 runs it so).
func TestCrossProcessWakeListenURL(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	requireCrossWake(t, ctx, notify.New(env.Pool, nil, notify.Options{ListenURL: env.ListenURL}),
		notify.New(env.Pool, nil, notify.Options{ListenURL: env.ListenURL}))
}

// requireCrossWake runs both hubs and fails unless, once each knows the
// other, a publish on sender wakes a subscriber of receiver.
func requireCrossWake(t *testing.T, ctx context.Context, sender, receiver *notify.Hub) {
	t.Helper()
	go sender.Run(ctx)
	go receiver.Run(ctx)
	tenant := uuid.New()
	sub := receiver.Subscribe(tenant)
	defer sub.Close()

	// The hubs meet through their hellos.
	require.Eventually(t, func() bool { return sender.Peers() == 1 && receiver.Peers() == 1 },
		20*time.Second, 10*time.Millisecond, "the hubs never heard each other")
	// Meeting wakes every subscriber once (peerSettle): let that pass,
	// so that the wake-up below can only come from the publish.
	time.Sleep(500 * time.Millisecond)
	select {
	case <-sub.C:
	default:
	}
	sender.Publish(tenant)
	select {
	case <-sub.C:
	case <-time.After(10 * time.Second):
		t.Fatal("no cross-process wake-up")
	}
}

// A hub with no peer sends no NOTIFY; a listener that says hello gets an
// answer, and from then on the hub's wake-ups.
func TestNotifyOnlyWithPeers(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lc, err := pgx.Connect(ctx, env.OwnerURL)
	require.NoError(t, err)
	defer lc.Close(context.Background())
	_, err = lc.Exec(ctx, "LISTEN "+notify.Channel)
	require.NoError(t, err)
	next := func(d time.Duration) (string, bool) {
		wctx, wcancel := context.WithTimeout(ctx, d)
		defer wcancel()
		n, err := lc.WaitForNotification(wctx)
		if err != nil {
			return "", false
		}
		return n.Payload, true
	}

	h := notify.New(env.Pool, nil, notify.Options{ListenURL: env.ListenURL})
	go h.Run(ctx)
	p, ok := next(10 * time.Second)
	require.True(t, ok, "a starting hub says hello")
	self, body, _ := strings.Cut(p, "|")
	require.Equal(t, "hello", body)
	require.Equal(t, 0, h.Peers())

	tenant := uuid.New()
	for range 5 {
		h.Publish(tenant)
		time.Sleep(5 * time.Millisecond)
	}
	p, ok = next(300 * time.Millisecond)
	require.False(t, ok, "a lone hub sends no wake-ups; got %q", p)

	_, err = lc.Exec(ctx, "SELECT pg_notify($1, $2)", notify.Channel, "peer1|hello")
	require.NoError(t, err)
	p, ok = next(10 * time.Second)
	require.True(t, ok)
	require.Equal(t, "peer1|hello", p, "our own hello comes back first")
	p, ok = next(10 * time.Second)
	require.True(t, ok)
	require.Equal(t, self+"|hello", p, "the hub answers a new peer's hello")
	require.Equal(t, 1, h.Peers())

	h.Publish(tenant)
	p, ok = next(10 * time.Second)
	require.True(t, ok, "with a peer, wake-ups go out")
	require.Equal(t, self+"|"+tenant.String(), p)

	// A known peer's hello is not answered again.
	_, err = lc.Exec(ctx, "SELECT pg_notify($1, $2)", notify.Channel, "peer1|hello")
	require.NoError(t, err)
	p, _ = next(time.Second)
	require.Equal(t, "peer1|hello", p)
	p, ok = next(300 * time.Millisecond)
	require.False(t, ok, "no second answer; got %q", p)
}
