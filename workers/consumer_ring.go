package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/db"
)

// ConsumerRingArgs runs one step of the consumers' generation ring
// (db.ConsumerRingStep): retire the oldest generation by TRUNCATE, or
// advance the ring.
type ConsumerRingArgs struct{}

// Kind is the River job kind.
func (ConsumerRingArgs) Kind() string { return "mio.consumer_ring" }

// InsertOpts puts the ring on the maintenance queue; a step is safe to
// repeat, so a failed one simply waits for the next tick.
func (ConsumerRingArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 1}
}

// ConsumerRingWorker steps the ring; Period is how long a generation is
// written to before the ring advances.
type ConsumerRingWorker struct {
	river.WorkerDefaults[ConsumerRingArgs]
	Pool   *pgxpool.Pool
	Period time.Duration
	Log    *slog.Logger
}

// Work runs one step, then a second when the first retired a generation
// (so the ring advances in the same tick when it is due).
func (w *ConsumerRingWorker) Work(ctx context.Context, _ *river.Job[ConsumerRingArgs]) error {
	for range 2 {
		st, err := db.ConsumerRingStep(ctx, w.Pool, w.Period)
		if errors.Is(err, db.ErrRingBusy) {
			if w.Log != nil {
				w.Log.Warn("consumer ring: retire postponed, a query holds the oldest generation's partitions")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("consumer ring: %w", err)
		}
		if st.Retired >= 0 && w.Log != nil {
			w.Log.Info("consumer ring: generation retired", "gen", st.Retired, "consumers", st.Consumers, "moved_out", st.Moved)
		}
		if st.Retired < 0 {
			return nil
		}
	}
	return nil
}

// AddConsumerRing registers the ring worker: a generation is written for
// period (default 1 minute) and the ring is stepped every period/4.
func (s *Set) AddConsumerRing(pool *pgxpool.Pool, period time.Duration, log *slog.Logger) {
	if period <= 0 {
		period = time.Minute
	}
	addWorker(s, &ConsumerRingWorker{Pool: pool, Period: period, Log: log}, QueueMaintenance, 2)
	s.Periodic = append(s.Periodic, river.NewPeriodicJob(river.PeriodicInterval(period/4),
		func() (river.JobArgs, *river.InsertOpts) { return ConsumerRingArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
}
