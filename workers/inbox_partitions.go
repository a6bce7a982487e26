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

// InboxPartitionsArgs creates the inbox's day partitions ahead of time.
type InboxPartitionsArgs struct{}

// Kind is the River job kind.
func (InboxPartitionsArgs) Kind() string { return "mio.inbox_partitions" }

// InsertOpts puts the job on the maintenance queue; it is safe to repeat.
func (InboxPartitionsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 3}
}

// DefaultInboxPartitionsAhead is how many days ahead partitions exist.
const DefaultInboxPartitionsAhead = 7

// InboxPartitionsWorker makes sure the day partitions from today to Ahead
// days later exist, so ingest never writes into the default partition.
type InboxPartitionsWorker struct {
	river.WorkerDefaults[InboxPartitionsArgs]
	Pool *pgxpool.Pool
	// Ahead days (default 7). Now is the clock (default time.Now).
	Ahead  int
	Now    func() time.Time
	Logger *slog.Logger
}

// Work creates the missing partitions. A busy inbox (the brief ACCESS
// EXCLUSIVE lock not granted in time) waits for the next run: the days
// ahead leave a week of slack.
func (w *InboxPartitionsWorker) Work(ctx context.Context, _ *river.Job[InboxPartitionsArgs]) error {
	ahead, now := w.Ahead, w.Now
	if ahead <= 0 {
		ahead = DefaultInboxPartitionsAhead
	}
	if now == nil {
		now = time.Now
	}
	t := now()
	n, err := db.InboxPartitionsEnsure(ctx, w.Pool, t, t.AddDate(0, 0, ahead))
	if errors.Is(err, db.ErrInboxBusy) {
		if w.Logger != nil {
			w.Logger.Warn("inbox partitions: creation postponed, mio.inbox busy")
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("inbox partitions: %w", err)
	}
	if n > 0 && w.Logger != nil {
		w.Logger.Info("inbox partitions: created", "days", n)
	}
	return nil
}

// AddInboxPartitions registers the worker and runs it every interval
// (default 1 hour) and at start.
func (s *Set) AddInboxPartitions(w *InboxPartitionsWorker, interval time.Duration) {
	if interval <= 0 {
		interval = time.Hour
	}
	addWorker(s, w, QueueMaintenance, 1)
	s.Periodic = append(s.Periodic, river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return InboxPartitionsArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
}
