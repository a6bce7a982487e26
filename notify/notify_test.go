package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
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
	other, err := db.Open(ctx, env.OwnerURL, db.PoolOptions{MaxConns: 4, RuntimeRole: dbtest.RuntimeRole})
	require.NoError(t, err)
	defer other.Close()
	requireCrossWake(t, ctx, notify.New(env.Pool, nil, notify.Options{}), notify.New(other, nil, notify.Options{}))
}

// TestCrossProcessWakeListenURL: with ListenURL the receiver LISTENs on
// its own direct connection, so both hubs may use a pool behind a
// transaction pooler (MIO_TEST_PGBOUNCER=1 runs it so).
func TestCrossProcessWakeListenURL(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	requireCrossWake(t, ctx, notify.New(env.Pool, nil, notify.Options{}),
		notify.New(env.Pool, nil, notify.Options{ListenURL: env.ListenURL}))
}

// requireCrossWake runs both hubs and fails unless a publish on sender
// wakes a subscriber of receiver.
func requireCrossWake(t *testing.T, ctx context.Context, sender, receiver *notify.Hub) {
	t.Helper()
	go sender.Run(ctx)
	go receiver.Run(ctx)
	tenant := uuid.New()
	sub := receiver.Subscribe(tenant)
	defer sub.Close()

	// The receiver's LISTEN may not be up yet: publish until it wakes.
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-sub.C:
			return
		case <-tick.C:
			sender.Publish(tenant)
		case <-deadline:
			t.Fatal("no cross-process wake-up")
		}
	}
}
