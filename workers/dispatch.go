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
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/tracing"
)

// DispatchMaxWorkersDefault is the dispatch queue's default concurrency.
// Dispatch jobs mostly wait on platforms' HTTP answers, and concurrent
// jobs share claim and finish transactions: more of them in flight means
// larger batches.
const DispatchMaxWorkersDefault = 400

// DispatchConfig configures the dispatcher. Zero values take the
// defaults named on each field.
type DispatchConfig struct {
	// Accounts resolves each row's account with its sending adapter; its
	// cache bounds how soon an account change reaches the dispatcher
	// (accounts.CacheTTL). Required.
	Accounts *accounts.Resolver
	// BackoffBase and BackoffMax shape the retry delay after a transient
	// failure (RetryPolicy.Base and Max): attempt k waits a uniformly
	// random time in [0, min(BackoffMax, BackoffBase·2^(k-1))] (full
	// jitter). Defaults 1s and 5m.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Extras is how many more rows a dispatch job of an account without
	// rate limits takes over, when their own jobs have not started.
	// Default 16; negative disables.
	Extras int
	// Flushers is the number of claim-and-finish transactions in flight
	// at once. Default 2.
	Flushers int
	// Lease is how long a claimed attempt belongs to its worker; after it
	// a crashed attempt is resumed (same attempt number and idempotency
	// key). Default SendTimeout + 15s; it must exceed SendTimeout.
	Lease time.Duration
	// InlineWait is the longest wait (retry backoff, rate limit, a busy
	// lane) a worker sleeps through itself; longer waits snooze the job.
	// Default 1s.
	InlineWait time.Duration
	// JobTimeout bounds one run of a dispatch job (River's job timeout);
	// a stream still open near it is handed over to a new job. Default
	// SendTimeout + max(the inline budget, LaneBudget) + 30s; tests
	// shorten it.
	JobTimeout time.Duration
	// LaneBudget is how long, from its start, a dispatch job keeps
	// draining the lanes of the rows it hands off (each hand-off claims
	// the lane's next message for the job) before it gives a lane's next
	// message a job of its own. Default 20s.
	LaneBudget time.Duration
	// LaneWait is how long a job snoozes whose row waits behind an
	// earlier message of its lane on an account without rate limits. The
	// job that hands the earlier message off claims this row at once (and
	// deletes the snoozed job), so LaneWait only bounds how late a lost
	// hand-on is noticed. Default 1m.
	LaneWait time.Duration
	// Logger receives per-message logs (dead letters at warn).
	Logger *slog.Logger
	// TracerProvider records a span per attempt and wait, under the job
	// run's span (River's, workers.Config.TracerProvider) or the trace
	// context stored with the attempted row. Nil: no spans.
	TracerProvider trace.TracerProvider
	// MaxAttempts per attempt series unless the account sets its own
	// (RetryPolicy.MaxAttempts). Default jobs.DispatchMaxAttempts.
	MaxAttempts int
	// MaxBatch caps the rows of one claim or finish transaction. Default 128.
	MaxBatch int
	// MaxSends caps the provider calls in flight in this process (a job
	// sends its extra rows concurrently). Default 512.
	MaxSends int
	// MaxWorkers is the dispatch queue's concurrency. Default
	// DispatchMaxWorkersDefault.
	MaxWorkers int
	// Metrics records sends; nil records into a private registry.
	Metrics *metrics.Outbound
	// ReceiptTimeout is how long a message sent on a channel with
	// delivery receipts waits for a delivered or read receipt before its
	// provider_state becomes timed_out. Default 24h.
	ReceiptTimeout time.Duration
	// SendTimeout bounds one provider call. Default 30s.
	SendTimeout time.Duration
	// StreamEditIntervals replace the channels' edit intervals of
	// streamed replies (channels.Info.StreamEditInterval), by channel
	// type; tests shorten them.
	StreamEditIntervals map[string]time.Duration
	// StreamTimeout is how long a streamed reply may stay open, from its
	// send: then it is finished with its text so far (a stream_timed_out
	// event). Default StreamTimeoutDefault.
	StreamTimeout time.Duration
	// StreamConns caps the pool connections the process's open streams
	// use at once for their looks and token takes. Each open stream is a
	// job that looks at its row every edit interval; streams opened
	// together look together, and unbounded they would take every
	// connection of the pool for a moment, which the API's requests (the
	// streams' own appends) then wait for. Default a quarter of the
	// pool's connections, and at least 4 (or half of a smaller pool).
	StreamConns int
}

func (c *DispatchConfig) setDefaults() {
	if c.BackoffBase <= 0 {
		c.BackoffBase = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.Extras == 0 {
		c.Extras = 16
	}
	if c.Extras < 0 {
		c.Extras = 0
	}
	if c.Flushers <= 0 {
		c.Flushers = 2
	}
	if c.InlineWait <= 0 {
		c.InlineWait = time.Second
	}
	if c.LaneBudget <= 0 {
		c.LaneBudget = 20 * time.Second
	}
	if c.LaneWait <= 0 {
		c.LaneWait = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = jobs.DispatchMaxAttempts
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 128
	}
	if c.MaxSends <= 0 {
		c.MaxSends = 512
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = DispatchMaxWorkersDefault
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
	if c.StreamTimeout <= 0 {
		c.StreamTimeout = StreamTimeoutDefault
	}
}

// lease is how long a claimed attempt belongs to its worker.
func (c *DispatchConfig) lease() time.Duration { return c.Lease }

// inlineBudget bounds the time one job run spends waiting inline.
func (c *DispatchConfig) inlineBudget() time.Duration { return 5 * c.InlineWait }

// slotWait bounds a claimed row's wait for a provider call slot, so that
// the wait, the call (SendTimeout) and the finish fit in the row's lease
// (5 s to spare): 10 s with the defaults.
func (c *DispatchConfig) slotWait() time.Duration {
	return max(c.Lease-c.SendTimeout-5*time.Second, time.Second)
}

// Dispatcher hands outbox rows to their platforms. Concurrent jobs share
// transactions (package groupcommit, without a window): one transaction
// records the outcomes of a batch of attempts and claims the next batch of
// rows, so the database cost of a send is a fraction of one short
// transaction.
type Dispatcher struct {
	pool  *pgxpool.Pool
	cfg   DispatchConfig
	lanes *laneSignals
	ops   *groupcommit.Committer[opReq, opRes]
	// limits are the channels' default rate limits, from the registry.
	limits map[string][]bucketSpec
	// unlimited lists the channels without default rate limits.
	unlimited []string
	// streamEvery is each channel's edit interval for streamed replies.
	streamEvery map[string]time.Duration
	// sends bounds the provider calls in flight.
	sends chan struct{}
	// streamConns bounds the connections streams use at once
	// (DispatchConfig.StreamConns).
	streamConns chan struct{}
	// extrasQuiet: per tenant, until when claims ask for no extras — set
	// when a request found none (see opsTenant).
	extrasMu    sync.Mutex
	extrasQuiet map[uuid.UUID]time.Time
	// senders runs the sends of sendAll (see goPool).
	senders *goPool
	// tracer records dispatch spans (dispatch_trace.go); nil: none.
	tracer trace.Tracer
}

// senderIdle is how long a send goroutine waits for the next send before
// it exits.
const senderIdle = 5 * time.Second

// NewDispatcher returns a dispatcher on pool.
func NewDispatcher(pool *pgxpool.Pool, cfg DispatchConfig) *Dispatcher {
	cfg.setDefaults()
	if cfg.StreamConns <= 0 {
		cfg.StreamConns = 2
		if pool != nil {
			n := int(pool.Config().MaxConns)
			cfg.StreamConns = max(min(4, n/2), n/4, 1)
		}
	}
	d := &Dispatcher{pool: pool, cfg: cfg, lanes: newLaneSignals(), sends: make(chan struct{}, cfg.MaxSends),
		streamConns: make(chan struct{}, cfg.StreamConns),
		extrasQuiet: map[uuid.UUID]time.Time{}, senders: newGoPool(senderIdle), tracer: tracing.Tracer(cfg.TracerProvider)}
	// A dispatcher without accounts (tests reading its settings) has no
	// channels, so no limits.
	var reg *channels.Registry
	if cfg.Accounts != nil {
		reg = cfg.Accounts.Registry()
	}
	d.limits = defaultBuckets(reg)
	d.streamEvery = streamEvery(reg)
	for ct, every := range cfg.StreamEditIntervals {
		d.streamEvery[ct] = every
	}
	for _, ct := range reg.Types() {
		if len(d.limits[ct]) == 0 {
			d.unlimited = append(d.unlimited, ct)
		}
	}
	// No window: a batch is the claims and finishes that queued while the
	// previous ones were in flight.
	d.ops = groupcommit.New(d.runOps, groupcommit.Config{Window: -1, MaxBatch: cfg.MaxBatch, Flushers: cfg.Flushers,
		Logger: cfg.Logger, Name: "dispatch"})
	d.ops.Start()
	return d
}

// Stop ends the dispatcher's shared transactions once those queued are
// done. Call it after River stopped: a claim or finish after it fails.
func (d *Dispatcher) Stop() { d.ops.Stop() }

// AddDispatch registers the dispatch worker on the dispatch queue.
func (s *Set) AddDispatch(pool *pgxpool.Pool, cfg DispatchConfig) *Dispatcher {
	d := NewDispatcher(pool, cfg)
	addWorker(s, &DispatchWorker{d: d}, jobs.QueueDispatch, d.cfg.MaxWorkers)
	return d
}

// DispatchWorker works dispatch jobs.
type DispatchWorker struct {
	river.WorkerDefaults[jobs.DispatchArgs]
	d *Dispatcher
}

// Timeout bounds one run: a provider call, inline waits, and the
// transactions around them.
func (w *DispatchWorker) Timeout(*river.Job[jobs.DispatchArgs]) time.Duration {
	return w.d.JobTimeout()
}

// NextRetry is when a failed run of a dispatch job runs again (see
// RetryPolicy).
func (w *DispatchWorker) NextRetry(job *river.Job[jobs.DispatchArgs]) time.Time {
	return w.d.retry().NextRetry(job.JobRow)
}

// JobTimeout bounds one run of a dispatch job.
func (d *Dispatcher) JobTimeout() time.Duration {
	if d.cfg.JobTimeout > 0 {
		return d.cfg.JobTimeout
	}
	return d.cfg.SendTimeout + max(d.cfg.inlineBudget(), d.cfg.LaneBudget) + 30*time.Second
}

// Work claims the job's row, sends it, and records the outcome, looping
// through short waits (retry backoff, rate limits, an earlier message of
// the conversation still in flight) and snoozing the job for long ones.
// A job of an account without rate limits also takes over a few more
// sendable rows whose own jobs have not started yet (their jobs are
// deleted), so that River's cost per job is shared by several sends, and
// drains the lanes of the rows it hands off: each hand-off claims the
// lane's next message for the job (see sendLane).
//
// A job that names more rows (a group of sends, jobs.DispatchArgs.More)
// claims them together with its own in its first claim and sends them as
// it sends extras; those it cannot claim are queued behind an earlier
// message of their lane, whose job hands on to them, or were taken by
// another job. On an account with rate limits each gets a job of its own.
func (w *DispatchWorker) Work(ctx context.Context, job *river.Job[jobs.DispatchArgs]) error {
	if w.d.tracer != nil {
		ctx = w.d.jobSpan(ctx, job.Args.TenantID, job.Args.OutboxID, jobs.Traceparent(job.Metadata) != "")
	}
	return w.d.dispatch(ctx, job.ID, job.Args.TenantID, job.Args.OutboxID, job.Args.AccountID, job.Args.More)
}

func (d *Dispatcher) dispatch(ctx context.Context, jobID int64, tenantID, id, accountID uuid.UUID, more []uuid.UUID) error {
	start := time.Now()
	client := clientFromContext(ctx)
	polls := 0
	// Rows of accounts without rate limits take the one-statement claim.
	fast := false
	if accountID != uuid.Nil {
		acct, err := d.cfg.Accounts.Outbound(ctx, tenantID, accountID)
		if err != nil && !errors.Is(err, accounts.ErrCannotSend) {
			return fmt.Errorf("dispatch %s: %w", id, err)
		}
		fast = err == nil && !acct.RateLimited && len(d.limits[acct.ChannelType]) == 0
	}
	if len(more) > 0 && !fast {
		// Token-bucket claims go one row per job: the group's other rows
		// get jobs of their own (a retry of this job may give them a
		// second: the row, not the job, decides).
		items := make([]rescheduled, len(more))
		for i, m := range more {
			items[i] = rescheduled{id: m, accountID: accountID}
		}
		if err := d.reschedule(ctx, tenantID, items); err != nil {
			return fmt.Errorf("dispatch %s: jobs for its group: %w", id, err)
		}
		more = nil
	}
	for {
		req := opReq{tenantID: tenantID, claim: id, fast: fast, jobID: jobID, client: client}
		if fast {
			req.also = more
			req.extras = max(0, d.cfg.Extras-len(more))
			more = nil // claimed once; what is left is handed on or taken
		}
		op, err := d.ops.Do(ctx, req)
		if err == nil {
			err = op.err
		}
		if err != nil {
			return fmt.Errorf("dispatch %s: claim: %w", id, err)
		}
		res := op.claim
		var own []*claimRes
		if res.kind == claimClaimed {
			own = append(own, &res)
		}
		if len(own)+len(op.extras) > 0 {
			run := laneRun{jobID: jobID, start: start, chain: fast && jobID != 0, client: client}
			fins, err := d.sendAll(ctx, tenantID, run, own, op.extras)
			if errors.Is(err, errStreamHandover) {
				return nil // the stream goes on under the job it was given
			}
			if err != nil {
				return fmt.Errorf("dispatch %s: %w", id, err)
			}
			if res.kind == claimClaimed {
				fin := fins[0]
				switch fin.Outcome {
				case db.OutcomeHandedOff, db.OutcomeDead:
					return nil
				}
				if err := d.pause(ctx, start, fin.Delay, "", "provider"); err != nil {
					return err
				}
				polls = 0
				continue
			}
		}
		switch res.kind {
		case claimDone:
			return nil
		case claimWait:
			if res.park {
				return river.JobSnooze(res.wait)
			}
			wait, reason := res.wait, "bucket"
			if res.poll {
				reason = "lane"
				// Something ahead in the lane is in flight: poll with a
				// growing interval (a finish in this process wakes us).
				wait = max(wait, min(10*time.Millisecond<<min(polls, 6), 500*time.Millisecond))
				polls++
			}
			if err := d.pause(ctx, start, wait, res.lane, reason); err != nil {
				return err
			}
		}
	}
}

// sendAll makes one attempt for each claimed row (the job's own first,
// then its extras) concurrently, records the outcomes, and returns the
// own rows' outcomes in order. Each row's lane is drained behind it while
// run allows (sendLane). Extras and lane rows that need another attempt,
// and lane rows left for a job of their own, get a dispatch job again.
func (d *Dispatcher) sendAll(ctx context.Context, tenantID uuid.UUID, run laneRun, own []*claimRes, extras []*db.ClaimCandidate) ([]db.OutboxFinish, error) {
	all := make([]claimRes, 0, len(own)+len(extras))
	for _, r := range own {
		all = append(all, *r)
	}
	for _, c := range extras {
		all = append(all, claimRes{kind: claimClaimed, cand: c, lane: laneKey(tenantID, c.AccountID, c.ConversationID)})
	}
	fins := make([]db.OutboxFinish, len(all))
	errs := make([]error, len(all))
	var mu sync.Mutex
	var again []rescheduled
	var wg sync.WaitGroup
	for i := range all {
		wg.Add(1)
		d.senders.Go(func() {
			defer wg.Done()
			fin, later, err := d.sendLane(ctx, tenantID, run, all[i])
			mu.Lock()
			defer mu.Unlock()
			fins[i], errs[i] = fin, err
			again = append(again, later...)
			switch {
			case i < len(own):
				// The job's own rows: their errors fail the job (River
				// retries it) and their retries loop in dispatch.
			case err != nil:
				// An extra row whose outcome could not be recorded: its
				// own job resumes it when its lease ends (see sendLane).
				again = append(again, rescheduled{id: all[i].cand.ID, accountID: all[i].cand.AccountID, delay: d.cfg.lease()})
			case fin.Outcome != db.OutcomeHandedOff && fin.Outcome != db.OutcomeDead:
				again = append(again, rescheduled{id: fin.ID, accountID: all[i].cand.AccountID, delay: fin.Delay})
			}
		})
	}
	wg.Wait()
	if len(again) > 0 {
		if err := d.rescheduleRetrying(ctx, tenantID, again); err != nil {
			d.cfg.Logger.Warn("dispatch: reschedule extra rows; the sweeper will", "err", err)
		}
	}
	for _, err := range errs[:len(own)] {
		if err != nil {
			return nil, err
		}
	}
	return fins[:len(own)], nil
}

// clientFromContext is the River client running the job of ctx, nil
// outside a job.
func clientFromContext(ctx context.Context) *river.Client[pgx.Tx] {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return nil
	}
	return client
}

// rescheduleRetrying is reschedule, tried again for up to the lease (at
// least 10 s) while the database is unreachable (a crash-restart takes
// seconds; behind PgBouncer, its server_login_retry more): rows whose
// outcome could not be recorded are in the batch, and the sweeper that
// would otherwise give them a job runs only under River's leader, which a
// crash of its process leaves vacant for its whole term.
func (d *Dispatcher) rescheduleRetrying(ctx context.Context, tenantID uuid.UUID, items []rescheduled) error {
	if ctx.Err() != nil {
		// The run was cancelled (the job timeout, shutdown) and its rows
		// still need their jobs: one bounded try; River's rescue of the
		// job or the sweeper covers a failure.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return d.reschedule(cctx, tenantID, items)
	}
	deadline := time.Now().Add(max(d.cfg.lease(), 10*time.Second))
	wait := 100 * time.Millisecond
	for {
		err := d.reschedule(ctx, tenantID, items)
		if err == nil || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// rescheduled is a row that needs a dispatch job of its own.
type rescheduled struct {
	id, accountID uuid.UUID
	delay         time.Duration
}

// reschedule gives extra rows that need another attempt a dispatch job of
// their own, due when the attempt is (at once for no delay).
func (d *Dispatcher) reschedule(ctx context.Context, tenantID uuid.UUID, items []rescheduled) error {
	client := river.ClientFromContext[pgx.Tx](ctx)
	return db.InTenantTx(ctx, d.pool, tenantID, func(tx pgx.Tx) error {
		return enqueueDispatch(ctx, client, tx, tenantID, items)
	})
}

// enqueueDispatch inserts, in tx, a dispatch job for each row, due after
// its delay (at once for none), and records the jobs on the rows.
func enqueueDispatch(ctx context.Context, client *river.Client[pgx.Tx], tx pgx.Tx, tenantID uuid.UUID, items []rescheduled) error {
	params := make([]river.InsertManyParams, len(items))
	ids := make([]uuid.UUID, len(items))
	for i, it := range items {
		params[i] = river.InsertManyParams{Args: jobs.DispatchArgs{TenantID: tenantID, OutboxID: it.id, AccountID: it.accountID}}
		if it.delay > 0 {
			params[i].InsertOpts = &river.InsertOpts{ScheduledAt: time.Now().Add(it.delay)}
		}
		ids[i] = it.id
	}
	res, err := client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return fmt.Errorf("enqueue dispatch: %w", err)
	}
	jobIDs := make([]int64, len(res))
	for i, r := range res {
		jobIDs[i] = r.Job.ID
	}
	return db.OutboxSetJobs(ctx, tx, tenantID, ids, jobIDs)
}

// pause waits inline when the wait is short and the run's inline budget
// allows, else snoozes the job (River runs it again after wait). A lane
// signal ends an inline wait early.
func (d *Dispatcher) pause(ctx context.Context, start time.Time, wait time.Duration, lane, reason string) error {
	wait = max(wait, time.Millisecond)
	span := waitSpan(ctx, reason)
	defer span.End()
	if wait > d.cfg.InlineWait || time.Since(start)+wait > d.cfg.inlineBudget() {
		if span.IsRecording() {
			span.AddEvent("snoozed")
		}
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
		d.lanes.forget(lane, signal)
		return ctx.Err()
	case <-t.C:
		// The lane's earlier message finished elsewhere (or not yet): do not
		// keep its signal for ever.
		d.lanes.forget(lane, signal)
	case <-signal:
	}
	return nil
}

// attemptKey is the provider idempotency key of an attempt: the same for
// a resumed attempt, new for every next attempt and series.
func attemptKey(id uuid.UUID, attemptNo int) string {
	return fmt.Sprintf("mio-%s-%d", id, attemptNo)
}

// seriesKey is the key of an attempt series, the same on every attempt
// of it (retries, resumed attempts after a crash): "mio-<id>" for the
// first series, "mio-<id>-r<first attempt>" for a series an explicit
// resend started.
func seriesKey(id uuid.UUID, seriesFirstAttempt int) string {
	if seriesFirstAttempt <= 1 {
		return "mio-" + id.String()
	}
	return fmt.Sprintf("mio-%s-r%d", id, seriesFirstAttempt)
}

// retry is the dispatcher's retry policy, from its configuration.
func (d *Dispatcher) retry() RetryPolicy {
	return RetryPolicy{Base: d.cfg.BackoffBase, Max: d.cfg.BackoffMax, MaxAttempts: d.cfg.MaxAttempts}.withDefaults()
}

// backoff is the full-jitter delay after failure k of a series.
func (d *Dispatcher) backoff(k int) time.Duration { return d.retry().Backoff(k) }

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

// forget drops a lane's signal if it is still ch (other waiters of the
// lane then poll).
func (l *laneSignals) forget(key string, ch <-chan struct{}) {
	if key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.m[key]; ok && (<-chan struct{})(cur) == ch {
		delete(l.m, key)
	}
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

// errNoSendSlot: no provider call slot came free in time (waitSendSlot).
var errNoSendSlot = errors.New("no send slot free")
