package workers

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/db"
)

// DedupPruneArgs prunes inbound dedup keys older than their retention
// window, tenant by tenant, in bounded batches.
type DedupPruneArgs struct{}

// Kind is the River job kind.
func (DedupPruneArgs) Kind() string { return "mio.dedup_prune" }

// InsertOpts puts maintenance on its own queue.
func (DedupPruneArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 3}
}

// QueueMaintenance is the queue of periodic maintenance jobs.
const QueueMaintenance = "maintenance"

// DedupPruneWorker deletes dedup keys past Retention, at most BatchSize
// rows per statement and MaxPerRun rows per run, so a prune never holds
// long locks.
type DedupPruneWorker struct {
	river.WorkerDefaults[DedupPruneArgs]
	Pool      *pgxpool.Pool
	Retention time.Duration
	BatchSize int
	MaxPerRun int
	Now       func() time.Time
}

// Work prunes dedup keys, then edit references (inbound_refs, kept as
// long as the dedup keys), each with its own budget.
func (w *DedupPruneWorker) Work(ctx context.Context, _ *river.Job[DedupPruneArgs]) error {
	before := w.Now().Add(-w.Retention)
	tenants, err := db.TenantList(ctx, w.Pool)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	for _, prune := range []func(context.Context, db.DBTX, uuid.UUID, time.Time, int) (int64, error){
		db.InboundDedupPrune, db.InboundRefPrune,
	} {
		if err := w.pruneAll(ctx, tenants, before, prune); err != nil {
			return err
		}
	}
	return nil
}

func (w *DedupPruneWorker) pruneAll(ctx context.Context, tenants []*db.Tenant, before time.Time,
	prune func(context.Context, db.DBTX, uuid.UUID, time.Time, int) (int64, error)) error {
	budget := w.MaxPerRun
	for _, t := range tenants {
		for budget > 0 {
			var n int64
			err := db.InTenantTx(ctx, w.Pool, t.ID, func(tx pgx.Tx) error {
				var err error
				n, err = prune(ctx, tx, t.ID, before, min(w.BatchSize, budget))
				return err
			})
			if err != nil {
				return fmt.Errorf("prune tenant %s: %w", t.ID, err)
			}
			budget -= int(n)
			if n < int64(w.BatchSize) {
				break
			}
		}
	}
	return nil
}

// AddDedupPrune registers the worker and runs it every interval.
func (s *Set) AddDedupPrune(pool *pgxpool.Pool, retention, interval time.Duration) {
	addWorker(s, &DedupPruneWorker{Pool: pool, Retention: retention, BatchSize: 5000, MaxPerRun: 200_000, Now: time.Now}, QueueMaintenance, 2)
	s.Periodic = append(s.Periodic, river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return DedupPruneArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
}
