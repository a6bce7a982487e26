package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
)

// QueueDispatch is the queue of outbound dispatch jobs.
const QueueDispatch = "dispatch"

// DispatchArgs asks for one outbox row to be handed to its platform. It
// is inserted in the same transaction as the row (POST /v1/outbound, a
// resend) or by the outbox sweeper for a row whose job was lost. The row
// is the truth: a job whose row is already handed off or dead completes
// without doing anything, so a duplicate job is harmless.
type DispatchArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	OutboxID uuid.UUID `json:"outbox_id"`
}

// Kind is the River job kind.
func (DispatchArgs) Kind() string { return "mio.dispatch" }

// InsertOpts puts dispatch jobs on their own queue. Attempts here count
// River-level failures only (the database unavailable); send attempts are
// counted on the outbox row.
func (DispatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDispatch, MaxAttempts: 25}
}

// DispatchConfig configures the dispatcher. Zero values take the
// defaults named on each field.
type DispatchConfig struct {
	// BackoffBase and BackoffMax shape the retry delay after a transient
	// failure: attempt k waits a uniformly random time in
	// [0, min(BackoffMax, BackoffBase·2^(k-1))] (full jitter). Defaults
	// 1s and 5m.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Flushers is the number of claim (and of finish) transactions in
	// flight at once. Default 4.
	Flushers int
	// Lease is how long a claimed attempt belongs to its worker; after it
	// a crashed attempt is resumed (same attempt number and idempotency
	// key). Default SendTimeout + 15s; it must exceed SendTimeout.
	Lease time.Duration
	// InlineWait is the longest wait (retry backoff, rate limit, a busy
	// lane) a worker sleeps through itself; longer waits snooze the job.
	// Default 1s.
	InlineWait time.Duration
	// Logger receives per-message logs (dead letters at warn).
	Logger *slog.Logger
	// MaxAttempts per attempt series unless the account sets its own.
	// Default 5.
	MaxAttempts int
	// MaxBatch caps the rows of one claim or finish transaction. Default 128.
	MaxBatch int
	// MaxWorkers is the dispatch queue's concurrency. Default 100.
	MaxWorkers int
	// Metrics records sends; nil records into a private registry.
	Metrics *metrics.Outbound
	// OpenSecrets opens an account's sealed secrets. Required.
	OpenSecrets OpenSecretsFunc
	// ReceiptTimeout is how long a message sent on a channel with
	// delivery receipts waits for a delivered or read receipt before its
	// provider_state becomes timed_out. Default 24h.
	ReceiptTimeout time.Duration
	// Registry holds the channel adapters. Required.
	Registry *channels.Registry
	// SendTimeout bounds one provider call. Default 30s.
	SendTimeout time.Duration
}

func (c *DispatchConfig) setDefaults() {
	if c.BackoffBase <= 0 {
		c.BackoffBase = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.Flushers <= 0 {
		c.Flushers = 4
	}
	if c.InlineWait <= 0 {
		c.InlineWait = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 128
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = 100
	}
	if c.Metrics == nil {
		c.Metrics = metrics.NewOutbound(prometheus.NewRegistry())
	}
	if c.ReceiptTimeout <= 0 {
		c.ReceiptTimeout = 24 * time.Hour
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 30 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = c.SendTimeout + 15*time.Second
	}
}

// lease is how long a claimed attempt belongs to its worker.
func (c *DispatchConfig) lease() time.Duration { return c.Lease }

// inlineBudget bounds the time one job run spends waiting inline.
func (c *DispatchConfig) inlineBudget() time.Duration { return 5 * c.InlineWait }

// Dispatcher hands outbox rows to their platforms. Concurrent jobs share
// claim and finish transactions (group commit), so the database cost of a
// send is a fraction of two short transactions.
type Dispatcher struct {
	pool     *pgxpool.Pool
	cfg      DispatchConfig
	senders  *senders
	lanes    *laneSignals
	claims   *groupCommit[claimReq, claimRes]
	finishes *groupCommit[finishReq, finishRes]
}

// NewDispatcher returns a dispatcher on pool.
func NewDispatcher(pool *pgxpool.Pool, cfg DispatchConfig) *Dispatcher {
	cfg.setDefaults()
	d := &Dispatcher{pool: pool, cfg: cfg, lanes: newLaneSignals(),
		senders: newSenders(pool, cfg.OpenSecrets, cfg.Registry, 10*time.Second)}
	d.claims = newGroupCommit(cfg.MaxBatch, cfg.Flushers, d.runClaims)
	d.finishes = newGroupCommit(cfg.MaxBatch, cfg.Flushers, d.runFinishes)
	return d
}

// AddDispatch registers the dispatch worker on the dispatch queue.
func (s *Set) AddDispatch(pool *pgxpool.Pool, cfg DispatchConfig) *Dispatcher {
	d := NewDispatcher(pool, cfg)
	addWorker(s, &DispatchWorker{d: d}, QueueDispatch, d.cfg.MaxWorkers)
	return d
}

// DispatchWorker works dispatch jobs.
type DispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	d *Dispatcher
}

// Timeout bounds one run: a provider call, inline waits, and the
// transactions around them.
func (w *DispatchWorker) Timeout(*river.Job[DispatchArgs]) time.Duration { return w.d.JobTimeout() }

// JobTimeout bounds one run of a dispatch job.
func (d *Dispatcher) JobTimeout() time.Duration {
	return d.cfg.SendTimeout + d.cfg.inlineBudget() + 30*time.Second
}

// Work claims the job's row, sends it, and records the outcome, looping
// through short waits (retry backoff, rate limits, an earlier message of
// the conversation still in flight) and snoozing the job for long ones.
func (w *DispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	return w.d.dispatch(ctx, job.Args.TenantID, job.Args.OutboxID)
}

func (d *Dispatcher) dispatch(ctx context.Context, tenantID, id uuid.UUID) error {
	start := time.Now()
	polls := 0
	for {
		res, err := d.claims.do(ctx, claimReq{tenantID: tenantID, id: id})
		if err == nil {
			err = res.err
		}
		if err != nil {
			return fmt.Errorf("dispatch %s: claim: %w", id, err)
		}
		switch res.kind {
		case claimDone:
			return nil
		case claimWait:
			wait := res.wait
			if res.poll {
				// Something ahead in the lane is in flight: poll with a
				// growing interval (a finish in this process wakes us).
				wait = max(wait, min(10*time.Millisecond<<min(polls, 6), 500*time.Millisecond))
				polls++
			}
			if err := d.pause(ctx, start, wait, res.lane); err != nil {
				return err
			}
			continue
		}
		polls = 0
		fin, err := d.attempt(ctx, tenantID, res)
		if err != nil {
			// Shutdown or the database: the attempt stays leased and is
			// resumed with the same number and key after its lease.
			return fmt.Errorf("dispatch %s: %w", id, err)
		}
		fr, err := d.finishes.do(ctx, finishReq{tenantID: tenantID, item: fin})
		if err == nil {
			err = fr.err
		}
		if err != nil {
			return fmt.Errorf("dispatch %s: finish: %w", id, err)
		}
		switch fin.Outcome {
		case db.OutcomeHandedOff, db.OutcomeDead:
			d.lanes.notify(res.lane)
			return nil
		}
		if err := d.pause(ctx, start, fin.Delay, ""); err != nil {
			return err
		}
	}
}

// pause waits inline when the wait is short and the run's inline budget
// allows, else snoozes the job (River runs it again after wait). A lane
// signal ends an inline wait early.
func (d *Dispatcher) pause(ctx context.Context, start time.Time, wait time.Duration, lane string) error {
	wait = max(wait, time.Millisecond)
	if wait > d.cfg.InlineWait || time.Since(start)+wait > d.cfg.inlineBudget() {
		return river.JobSnooze(wait)
	}
	var signal <-chan struct{}
	if lane != "" {
		signal = d.lanes.wait(lane)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-signal:
	}
	return nil
}

// attemptKey is the provider idempotency key of an attempt: the same for
// a resumed attempt, new for every next attempt and series.
func attemptKey(id uuid.UUID, attemptNo int) string {
	return fmt.Sprintf("mio-%s-%d", id, attemptNo)
}

// backoff is the full-jitter delay before attempt k+1 of a series.
func (d *Dispatcher) backoff(k int) time.Duration {
	ceiling := d.cfg.BackoffMax
	if k-1 < 30 {
		if c := d.cfg.BackoffBase << (k - 1); c > 0 && c < ceiling {
			ceiling = c
		}
	}
	return max(time.Millisecond, time.Duration(rand.Int64N(int64(ceiling)+1)))
}

// maxErrorLen bounds last_error.
const maxErrorLen = 1000

func errorText(err error) string {
	s := err.Error()
	if len(s) > maxErrorLen {
		s = s[:maxErrorLen] + "…"
	}
	return s
}

// laneSignals wakes workers waiting for an earlier message of a lane when
// that message is handed off or dead in this process. Across processes,
// waiters poll.
type laneSignals struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func newLaneSignals() *laneSignals { return &laneSignals{m: map[string]chan struct{}{}} }

func laneKey(tenantID, accountID uuid.UUID, conversationID string) string {
	return tenantID.String() + "/" + accountID.String() + "/" + conversationID
}

func (l *laneSignals) wait(key string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, ok := l.m[key]
	if !ok {
		ch = make(chan struct{})
		l.m[key] = ch
	}
	return ch
}

func (l *laneSignals) notify(key string) {
	if key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch, ok := l.m[key]; ok {
		close(ch)
		delete(l.m, key)
	}
}

// errShutdown: the job's context ended during a provider call.
var errShutdown = errors.New("stopped during a provider call")
