package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/migrations"
	"github.com/miohq/mio/workers"
)

type wakeArgs struct{ N int }

func (wakeArgs) Kind() string { return "mio.test_wake" }

type wakeWorker struct {
	river.WorkerDefaults[wakeArgs]
	worked chan int
}

func (w *wakeWorker) Work(_ context.Context, j *river.Job[wakeArgs]) error {
	w.worked <- j.Args.N
	return nil
}

// A job inserted right after another of its queue, inside the
// inserting client's FetchCooldown, is not announced by River; once the
// first job's fetch has run it would wait for the producer's poll. The
// client's insert wake-up announces it: with a poll of an hour, the
// second job is worked anyway.
func TestInsertWakeAnnouncesJobsRiverLeftUnannounced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	const queue = "wake_test"

	// The worker hears only notifications: LISTEN needs a session.
	listen, err := db.Open(ctx, env.ListenURL, db.PoolOptions{MaxConns: 4, RuntimeRole: dbtest.RuntimeRole})
	require.NoError(t, err)
	t.Cleanup(listen.Close)
	w := &wakeWorker{worked: make(chan int, 2)}
	ws := river.NewWorkers()
	river.AddWorker(ws, w)
	worker, err := river.NewClient(riverpgxv5.New(listen), &river.Config{Schema: migrations.RiverSchema, Workers: ws,
		Queues: map[string]river.QueueConfig{queue: {MaxWorkers: 2}}, FetchCooldown: 10 * time.Millisecond, FetchPollInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, worker.Start(ctx))
	t.Cleanup(func() { _ = worker.Stop(context.Background()) })

	// An insert-only client whose window is long enough that the second
	// insert falls inside it.
	inserter, err := workers.NewClient(env.Pool, nil, workers.Config{FetchCooldown: 900 * time.Millisecond})
	require.NoError(t, err)
	insert := func(n int) {
		t.Helper()
		require.NoError(t, db.InTx(ctx, env.Pool, func(tx pgx.Tx) error {
			_, err := inserter.InsertTx(ctx, tx, wakeArgs{N: n}, &river.InsertOpts{Queue: queue})
			return err
		}))
	}
	for n := 1; n <= 2; n++ {
		if n == 2 {
			// Let the worker's fetch debounce (10 ms) run out, so that
			// only a notification (or the hour's poll) makes it fetch
			// again; no signal marks that moment. Job 2 stays inside the
			// inserter's 900 ms window unless job 1 took longer.
			time.Sleep(50 * time.Millisecond)
		}
		insert(n)
		select {
		case got := <-w.worked:
			require.Equal(t, n, got)
		case <-time.After(30 * time.Second):
			t.Fatalf("job %d not worked: not announced", n)
		}
	}
}
