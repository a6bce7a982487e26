package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/miohq/mio/db"
)

// OutboxSweeper enqueues a dispatch job for every active outbox row that
// no live job will dispatch — a row put back to work from SQL
// (mio.requeue), a job discarded after River-level failures, a job stuck
// on a crashed process, an attempt abandoned by its worker — and prunes
// idle rate buckets. It is what makes the outbox, not River, the source of
// truth.
//
// Every worker process runs one (Run); a pass takes the transaction-scoped
// advisory lock db.OutboxSweepLockKey without waiting, so one process
// sweeps at a time, the others skip that pass, and no election stands
// between a dead process and the next sweep.
type OutboxSweeper struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	cfg    OutboxSweepConfig
	// afterLock, when set, runs in a pass that took the lock, before it
	// sweeps (tests).
	afterLock func()
}

// OutboxSweepConfig configures the sweeper.
type OutboxSweepConfig struct {
	// BatchSize caps the rows enqueued per tenant and sweep. Default 1000.
	BatchSize int
	// Grace: rows are looked at once due this long (sending rows once
	// their lease ended this long ago). Default 10s.
	Grace time.Duration
	// Interval between a process's passes. Default 5s.
	Interval time.Duration
	// Logger receives the passes that failed. Default: discard.
	Logger *slog.Logger
	// Now is the clock the bounds above are measured on: the sweep
	// passes instants to SQL (never now()), so tests move this clock
	// instead of waiting them out. Default time.Now.
	Now func() time.Time
	// StuckAfter: a dispatch job running longer than this belongs to a
	// crashed process whose job River's rescuer has not taken back yet
	// (its rows get a job of their own). Default 3m; keep it above the
	// dispatch job timeout (Dispatcher.JobTimeout).
	StuckAfter time.Duration
}

// SweepResult is what one pass did.
type SweepResult struct {
	// Swept: the pass took the sweeper's lock and swept; false when
	// another process held it.
	Swept bool
	// Enqueued is how many rows were given a dispatch job.
	Enqueued int
}

// NewOutboxSweeper returns a sweeper that enqueues through client (an
// insert-only client will do).
func NewOutboxSweeper(pool *pgxpool.Pool, client *river.Client[pgx.Tx], cfg OutboxSweepConfig) *OutboxSweeper {
	cfg.setDefaults()
	return &OutboxSweeper{pool: pool, client: client, cfg: cfg}
}

// Run sweeps at once and then every Interval until ctx is done. A pass
// that fails is logged; the next one runs on time.
func (s *OutboxSweeper) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("outbox sweep", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep runs one pass in one transaction: it takes the sweeper's lock
// without waiting (another process holding it: nothing to do), keeps the
// outbox's statistics fresh, and sweeps every tenant. Each step runs in a
// savepoint of its own, so that a failed one leaves what the others did.
func (s *OutboxSweeper) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	var errs []error
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		locked, err := db.OutboxSweepLock(ctx, tx)
		if err != nil || !locked {
			return err
		}
		res.Swept = true
		if s.afterLock != nil {
			s.afterLock()
		}
		// Fresh statistics first: a fast-growing outbox must not be swept
		// (or dispatched) on the plans of a nearly empty table.
		if err := inSavepoint(ctx, tx, func(sp pgx.Tx) error {
			_, err := db.OutboxKeepStats(ctx, sp)
			return err
		}); err != nil {
			errs = append(errs, fmt.Errorf("outbox statistics: %w", err))
		}
		tenants, err := db.TenantList(ctx, tx)
		if err != nil {
			return fmt.Errorf("list tenants: %w", err)
		}
		for _, t := range tenants {
			n, err := s.sweepTenant(ctx, tx, t.ID)
			if err != nil {
				errs = append(errs, fmt.Errorf("sweep tenant %s: %w", t.ID, err))
			}
			res.Enqueued += n
		}
		return nil
	})
	if err != nil {
		return SweepResult{}, err
	}
	return res, errors.Join(errs...)
}

// sweepTenant enqueues dispatch jobs for one tenant's orphaned rows and
// prunes its idle rate buckets, in tx, and returns how many rows it
// enqueued.
func (s *OutboxSweeper) sweepTenant(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) (int, error) {
	now := s.cfg.Now()
	p := db.SweepParams{OverdueBefore: now.Add(-s.cfg.Grace), ScanRows: 2 * s.cfg.BatchSize,
		LeaseEndedBefore: now.Add(-s.cfg.Grace)}
	if err := db.SetDispatchTenant(ctx, tx, tenantID); err != nil {
		return 0, err
	}
	n := 0
	if err := inSavepoint(ctx, tx, func(sp pgx.Tx) (err error) {
		n, err = sweepOutbox(ctx, s.client, sp, tenantID, p, now.Add(-s.cfg.StuckAfter), s.cfg.BatchSize)
		return err
	}); err != nil {
		return 0, err
	}
	err := inSavepoint(ctx, tx, func(sp pgx.Tx) error {
		_, err := db.RateBucketPrune(ctx, sp, tenantID, now.Add(-time.Hour), 10_000)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("prune rate buckets: %w", err)
	}
	return n, nil
}

// inSavepoint runs fn in a savepoint of tx, released when fn returns nil
// and rolled back to otherwise.
func inSavepoint(ctx context.Context, tx pgx.Tx, fn func(sp pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, tx, fn)
}

// sweepOutbox enqueues, in tx (scoped to the tenant), a dispatch job for
// up to maxRows of the tenant's active outbox rows that no live job will
// dispatch, and returns how many. The rows come from
// db.OutboxSweepCandidates; which of their jobs are live is asked of
// River's client (JobList): waiting to run, or running since after
// stuckBefore. A job running longer is River's rescuer's to take back; the
// sweeper does not wait for it.
func sweepOutbox(ctx context.Context, client *river.Client[pgx.Tx], tx pgx.Tx, tenantID uuid.UUID, p db.SweepParams,
	stuckBefore time.Time, maxRows int) (int, error) {
	rows, err := db.OutboxSweepCandidates(ctx, tx, tenantID, p)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	live, err := liveJobs(ctx, client, tx, rows, stuckBefore)
	if err != nil {
		return 0, err
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
		return 0, nil
	}
	if err := enqueueDispatch(ctx, client, tx, tenantID, items); err != nil {
		return 0, err
	}
	return len(items), nil
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}
