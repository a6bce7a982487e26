package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/jobs"
)

// HeartbeatTimeoutDefault is how long a worker may go without refreshing
// its heartbeat row before it counts as dead.
const HeartbeatTimeoutDefault = 10 * time.Second

// ErrHeartbeatLost cancels the jobs of a worker that could not refresh its
// heartbeat for half the timeout.
var ErrHeartbeatLost = errors.New("worker heartbeat not refreshed: jobs stopped before they can be reclaimed")

// HeartbeatConfig configures a worker's heartbeat.
type HeartbeatConfig struct {
	// Logger receives reclaims (info) and lost heartbeats (warn).
	Logger *slog.Logger
	// Timeout: a worker whose row was not refreshed for this long is
	// dead and its running jobs are reclaimed. The row is refreshed every
	// Timeout/5; a worker that could not refresh it for Timeout/2 cancels
	// its running jobs and starts none until it can. Default
	// HeartbeatTimeoutDefault.
	Timeout time.Duration
}

// Heartbeat is a working process's liveness in mio.worker_heartbeats under
// its River client id, and the reclaimer of dead workers' jobs. River marks a job running when a process fetches it; if
// the process dies (SIGKILL, OOM, a lost node) the job stays running
// until River's rescuer takes it back after RescueStuckJobsAfter (an
// hour), and the outbox sweeper gives its send a new job only after the
// dispatch job timeout plus a minute. With a heartbeat, every live worker
// reclaims the running jobs of workers whose row expired, seconds after
// their death, and ends the leases of the sends they held (their attempts
// resume with the same idempotency key).
//
// Safety: a worker that cannot refresh its row (the database is out of
// reach) cancels its running jobs' contexts at half the timeout, and
// snoozes the jobs it fetches until it refreshes again; the row expires
// only at the full timeout, by the database's clock, so the jobs of a
// live worker are stopped before anyone may reclaim them. A worker whose
// refreshes ran unbroken for less than the timeout (just started, or
// back from a database outage) reclaims nothing, so after an outage every
// worker has a timeout to come back before any is judged.
//
// While River has no live leader (its leader was killed and still holds
// office until its row expires, or PostgreSQL was crash-restarted and the
// leader table is empty), every live worker also stands in for River's
// scheduler, which runs only on the leader: it makes due scheduled and
// retryable jobs available (mio.worker_schedule), so a send's retry or a
// snoozed job does not wait for the next election.
//
// Heartbeat is also the River worker middleware that does the
// cancelling: pass it as Config.Heartbeat.
type Heartbeat struct {
	river.MiddlewareDefaults
	pool    *pgxpool.Pool
	cfg     HeartbeatConfig
	enqueue *river.Client[pgx.Tx]

	mu sync.Mutex
	// live is closed when the heartbeat is lost; nil while it is.
	live  chan struct{}
	gen   int
	timer *time.Timer

	stop context.CancelFunc
	done chan struct{}

	// afterReclaim, when set (tests), runs after the jobs are reclaimed
	// and before their sends' leases are ended.
	afterReclaim func()
}

// NewHeartbeat returns the heartbeat of a working process on pool (a pool
// of its own: refreshes must not wait behind the jobs' queries). It holds
// every job until its first refresh (Start).
func NewHeartbeat(pool *pgxpool.Pool, cfg HeartbeatConfig) *Heartbeat {
	if cfg.Timeout <= 0 {
		cfg.Timeout = HeartbeatTimeoutDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Heartbeat{pool: pool, cfg: cfg}
}

func (h *Heartbeat) interval() time.Duration { return h.cfg.Timeout / 5 }

// Work runs a job under the heartbeat: cancelled (ErrHeartbeatLost) when
// the heartbeat is lost, snoozed while it is.
func (h *Heartbeat) Work(ctx context.Context, _ *rivertype.JobRow, doInner func(context.Context) error) error {
	h.mu.Lock()
	live := h.live
	h.mu.Unlock()
	if live == nil {
		return river.JobSnooze(h.interval())
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-live:
			cancel(ErrHeartbeatLost)
		case <-done:
		}
	}()
	return doInner(ctx)
}

// Start refreshes the row of River client clientID once (an error if it
// cannot), then every Timeout/5, reclaiming dead workers' jobs and, while
// River has no live leader, scheduling due jobs after each refresh, until
// Stop. enqueue inserts the dispatch jobs that rows held
// by reclaimed jobs need (nil leaves them to the outbox sweeper).
func (h *Heartbeat) Start(ctx context.Context, clientID string, enqueue *river.Client[pgx.Tx]) error {
	h.enqueue = enqueue
	start := time.Now()
	if _, err := db.WorkerHeartbeat(ctx, h.pool, clientID, h.cfg.Timeout); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	h.refreshed(start)
	runCtx, cancel := context.WithCancel(context.Background())
	h.stop, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		h.run(runCtx, clientID)
	}()
	return nil
}

// Stop ends the refreshes and deletes the row. Call it after River
// stopped: the jobs of a process without a row are left to River's
// rescuer.
func (h *Heartbeat) Stop() {
	if h.stop != nil {
		h.stop()
		<-h.done
	}
}

func (h *Heartbeat) run(ctx context.Context, clientID string) {
	t := time.NewTicker(h.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), h.interval())
			if err := db.WorkerHeartbeatDelete(dctx, h.pool, clientID); err != nil {
				h.cfg.Logger.Warn("heartbeat: delete the row at shutdown", "err", err)
			}
			cancel()
			return
		case <-t.C:
		}
		h.beat(ctx, clientID)
	}
}

// beat refreshes the row once and, when that worked, reclaims.
func (h *Heartbeat) beat(ctx context.Context, clientID string) {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, h.interval())
	_, err := db.WorkerHeartbeat(rctx, h.pool, clientID, h.cfg.Timeout)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			h.cfg.Logger.Warn("heartbeat: refresh", "err", err)
		}
		return
	}
	h.refreshed(start)
	if err := h.reclaim(ctx, clientID); err != nil && ctx.Err() == nil {
		h.cfg.Logger.Warn("heartbeat: reclaim dead workers' jobs", "err", err)
	}
	if err := h.schedule(ctx, clientID); err != nil && ctx.Err() == nil {
		h.cfg.Logger.Warn("heartbeat: schedule due jobs without a leader", "err", err)
	}
}

// schedule stands in for River's scheduler, which runs only on River's
// leader, while there is no live leader: a leader killed with SIGKILL
// holds office until its row expires, and a leader elected just before it
// died holds it again as long. Without this the jobs waiting for their
// time — a send's retry after its backoff, a job snoozed by a worker
// whose heartbeat was lost — would wait for the next election however
// long their send's lease ended ago. One look at two small tables while a
// leader lives (mio.worker_schedule).
func (h *Heartbeat) schedule(ctx context.Context, clientID string) error {
	moved, err := db.WorkerSchedule(ctx, h.pool, clientID, h.cfg.Timeout, 1000)
	if err != nil || len(moved) == 0 {
		return err
	}
	kinds := map[string]int{}
	for _, j := range moved {
		kinds[j.Kind]++
	}
	h.cfg.Logger.Info("heartbeat: made due jobs available while River has no live leader", "jobs", len(moved), "kinds", kinds)
	return nil
}

// refreshed records a refresh that began at start: the heartbeat is lost
// again at start + Timeout/2 unless refreshed before.
func (h *Heartbeat) refreshed(start time.Time) {
	left := h.cfg.Timeout/2 - time.Since(start)
	h.mu.Lock()
	defer h.mu.Unlock()
	if left <= 0 {
		return // too late: the row may expire before a job notices
	}
	if h.live == nil {
		h.live = make(chan struct{})
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	h.gen++
	gen := h.gen
	h.timer = time.AfterFunc(left, func() { h.lose(gen) })
}

// lose cancels the running jobs unless a refresh came after timer gen.
func (h *Heartbeat) lose(gen int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen != h.gen || h.live == nil {
		return
	}
	close(h.live)
	h.live = nil
	h.cfg.Logger.Warn("heartbeat lost: running jobs cancelled, new ones snoozed until it is refreshed", "timeout", h.cfg.Timeout.String())
}

// reclaim takes back the running jobs of dead workers and ends the
// leases of the sends their dispatch jobs held. A reclaimed job's retry
// resumes only its own row; the other rows it held (extras, the next
// messages of lanes it drained) get a dispatch job of their own here
// instead of waiting for the outbox sweeper, which runs only under
// River's leader — often the process that died.
//
// All of it is one transaction: a reclaimed job becomes available only
// with its sends' leases ended. Were the leases ended after the reclaim
// committed, a live worker could fetch the job in between (TestChaos saw
// it 0.5 ms later), find its send still leased and snooze until the dead
// worker's lease would have ended — about 30 s with the default lease.
func (h *Heartbeat) reclaim(ctx context.Context, clientID string) error {
	var reclaimed []db.ReclaimedJob
	ended, rejobbed := 0, 0
	err := db.InTx(ctx, h.pool, func(tx pgx.Tx) error {
		var err error
		reclaimed, err = db.WorkerReclaim(ctx, tx, clientID, h.cfg.Timeout, 1000)
		if err != nil || len(reclaimed) == 0 {
			return err
		}
		if h.afterReclaim != nil {
			h.afterReclaim()
		}
		dispatch := map[uuid.UUID][]int64{}
		var tenants []uuid.UUID
		for _, j := range reclaimed {
			if j.Kind == (jobs.DispatchArgs{}).Kind() && j.TenantID != uuid.Nil {
				if _, ok := dispatch[j.TenantID]; !ok {
					tenants = append(tenants, j.TenantID)
				}
				dispatch[j.TenantID] = append(dispatch[j.TenantID], j.ID)
			}
		}
		for _, tenantID := range tenants {
			if err := db.SetTenant(ctx, tx, tenantID); err != nil {
				return err
			}
			held, err := db.OutboxLeasesEnd(ctx, tx, tenantID, dispatch[tenantID])
			if err != nil {
				return err
			}
			var orphans []rescheduled
			for _, r := range held {
				if !r.Own {
					orphans = append(orphans, rescheduled{id: r.ID, accountID: r.AccountID})
				}
			}
			if len(orphans) > 0 && h.enqueue != nil {
				if err := enqueueDispatch(ctx, h.enqueue, tx, tenantID, orphans); err != nil {
					return err
				}
				rejobbed += len(orphans)
			}
			ended += len(held)
		}
		return nil
	})
	if err != nil || len(reclaimed) == 0 {
		return err
	}
	dead := map[string]int{}
	for _, j := range reclaimed {
		dead[j.DeadClient]++
	}
	h.cfg.Logger.Info("heartbeat: reclaimed the running jobs of dead workers", "jobs", len(reclaimed), "workers", dead,
		"send_leases_ended", ended, "sends_given_jobs", rejobbed)
	return nil
}
