package workers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/miohq/mio/db"
)

// OutboxSweepArgs runs the outbox sweeper: it enqueues a dispatch job for
// every active outbox row that no live job will dispatch — a row put back
// to work from SQL (mio.requeue), a job discarded after River-level
// failures, a job stuck on a crashed process, an attempt abandoned by its
// worker — and prunes idle rate buckets. It is what makes the outbox, not River, the source of truth.
type OutboxSweepArgs struct{}

// Kind is the River job kind.
func (OutboxSweepArgs) Kind() string { return "mio.outbox_sweep" }

// InsertOpts puts the sweeper on the maintenance queue.
func (OutboxSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 3}
}

// OutboxSweepConfig configures the sweeper.
type OutboxSweepConfig struct {
	// Interval between sweeps. Default 5s.
	Interval time.Duration
	// StuckAfter: a dispatch job running longer than this belongs to a
	// crashed process whose job River's rescuer has not taken back yet
	// (its rows get a job of their own). Default 3m; keep it above the
	// dispatch job timeout (Dispatcher.JobTimeout).
	StuckAfter time.Duration
	// BatchSize caps the rows enqueued per tenant and sweep. Default 1000.
	BatchSize int
	// Grace: rows are looked at once due this long (sending rows once
	// their lease ended this long ago). Default 10s.
	Grace time.Duration
	// Now is the clock the bounds above are measured on: the sweep
	// passes instants to SQL (never now()), so tests move this clock
	// instead of waiting them out. Default time.Now.
	Now func() time.Time
}

// OutboxSweepWorker sweeps.
type OutboxSweepWorker struct {
	river.WorkerDefaults[OutboxSweepArgs]
	Pool *pgxpool.Pool
	Cfg  OutboxSweepConfig
}

// Work sweeps every tenant.
func (w *OutboxSweepWorker) Work(ctx context.Context, _ *river.Job[OutboxSweepArgs]) error {
	client := river.ClientFromContext[pgx.Tx](ctx)
	tenants, err := db.TenantList(ctx, w.Pool)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	var errs []error
	// Fresh statistics first: a fast-growing outbox must not be swept (or
	// dispatched) on the plans of a nearly empty table.
	if _, err := db.OutboxKeepStats(ctx, w.Pool); err != nil {
		errs = append(errs, fmt.Errorf("outbox statistics: %w", err))
	}
	for _, t := range tenants {
		if _, err := w.sweepTenant(ctx, client, t.ID); err != nil {
			errs = append(errs, fmt.Errorf("sweep tenant %s: %w", t.ID, err))
		}
	}
	return errors.Join(errs...)
}

// sweepTenant enqueues dispatch jobs for one tenant's orphaned rows,
// prunes its idle rate buckets, and returns how many rows it enqueued.
func (w *OutboxSweepWorker) sweepTenant(ctx context.Context, client *river.Client[pgx.Tx], tenantID uuid.UUID) (int, error) {
	now := w.Cfg.Now()
	p := db.SweepParams{OverdueBefore: now.Add(-w.Cfg.Grace), ScanRows: 2 * w.Cfg.BatchSize,
		LeaseEndedBefore: now.Add(-w.Cfg.Grace)}
	n, err := SweepOutbox(ctx, w.Pool, client, tenantID, p, now.Add(-w.Cfg.StuckAfter), w.Cfg.BatchSize)
	if err != nil {
		return 0, err
	}
	return n, db.InTenantTx(ctx, w.Pool, tenantID, func(tx pgx.Tx) error {
		_, err := db.RateBucketPrune(ctx, tx, tenantID, now.Add(-time.Hour), 10_000)
		return err
	})
}

// SweepOutbox enqueues, in one transaction, a dispatch job for up to
// maxRows of the tenant's active outbox rows that no live job will
// dispatch, and returns how many. The rows come from
// db.OutboxSweepCandidates; which of their jobs are live is asked of
// River's client (JobList): waiting to run, or running since after
// stuckBefore. A job running longer is River's rescuer's to take back; the
// sweeper does not wait for it.
func SweepOutbox(ctx context.Context, pool *pgxpool.Pool, client *river.Client[pgx.Tx], tenantID uuid.UUID, p db.SweepParams,
	stuckBefore time.Time, maxRows int) (int, error) {
	n := 0
	err := db.InDispatchTx(ctx, pool, tenantID, func(tx pgx.Tx) error {
		rows, err := db.OutboxSweepCandidates(ctx, tx, tenantID, p)
		if err != nil || len(rows) == 0 {
			return err
		}
		live, err := liveJobs(ctx, client, tx, rows, stuckBefore)
		if err != nil {
			return err
		}
		var items []rescheduled
		for _, r := range rows {
			if len(items) == maxRows {
				break
			}
			if r.Abandoned || r.JobID == 0 || !live[r.JobID] {
				items = append(items, rescheduled{id: r.ID, accountID: r.AccountID})
			}
		}
		if len(items) == 0 {
			return nil
		}
		n = len(items)
		return enqueueDispatch(ctx, client, tx, tenantID, items)
	})
	return n, err
}

// liveJobs asks River which of the jobs of rows (the abandoned ones
// aside) can still dispatch them: waiting to run, or running since after
// stuckBefore.
func liveJobs(ctx context.Context, client *river.Client[pgx.Tx], tx pgx.Tx, rows []db.SweepCandidate,
	stuckBefore time.Time) (map[int64]bool, error) {
	var ids []int64
	for _, r := range rows {
		if r.JobID != 0 && !r.Abandoned {
			ids = append(ids, r.JobID)
		}
	}
	live := make(map[int64]bool, len(ids))
	if len(ids) == 0 {
		return live, nil
	}
	res, err := client.JobListTx(ctx, tx, river.NewJobListParams().IDs(ids...).First(min(len(ids), 10_000)).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateScheduled,
			rivertype.JobStateRetryable, rivertype.JobStateRunning))
	if err != nil {
		return nil, fmt.Errorf("list the rows' jobs: %w", err)
	}
	for _, j := range res.Jobs {
		if j.State != rivertype.JobStateRunning || j.AttemptedAt != nil && j.AttemptedAt.After(stuckBefore) {
			live[j.ID] = true
		}
	}
	return live, nil
}

// AddOutboxSweeper registers the sweeper and runs it every cfg.Interval.
func (s *Set) AddOutboxSweeper(pool *pgxpool.Pool, cfg OutboxSweepConfig) {
	cfg.setDefaults()
	addWorker(s, &OutboxSweepWorker{Pool: pool, Cfg: cfg}, QueueMaintenance, 2)
	s.Periodic = append(s.Periodic, river.NewPeriodicJob(river.PeriodicInterval(cfg.Interval),
		func() (river.JobArgs, *river.InsertOpts) { return OutboxSweepArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
}

func (c *OutboxSweepConfig) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = 5 * time.Second
	}
	if c.StuckAfter <= 0 {
		c.StuckAfter = 3 * time.Minute
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
	if c.Grace <= 0 {
		c.Grace = 10 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
