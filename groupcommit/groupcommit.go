// Package groupcommit gathers concurrent requests into shared
// transactions: a flusher takes the first waiting request, collects
// more for a short window (or until the batch is full), and commits them
// all at once, so one WAL flush and one round of statements serve many
// requests. A batch that fails is retried request by request, so one bad
// request never fails its batch-mates; when the database itself is
// unavailable every request of the batch gets that error at once.
// Config.Flushers transactions run at once, and Config.BurstFlushers
// more while the recent batches are small (see Config).
//
// Webhook ingest (package ingest), outbound sends and stream appends
// (package outbox) and the dispatcher's claims and finishes (package
// workers) use it. Internal to MIO; not a stable API.
package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ErrStopped is returned for requests submitted after Stop.
var ErrStopped = errors.New("group commit: stopped")

// Outcome is one request's answer from a committed batch: a result, or a
// per-request error (a refused request whose batch-mates committed).
type Outcome[Res any] struct {
	Res Res
	Err error
	// commit is the span of the transaction that answered (invalid when
	// not traced); Do links the request's span to it.
	commit trace.SpanContext
}

// Func commits reqs in one transaction, returning one Outcome per
// request in order. An error fails the whole batch: nothing of it may
// have committed, and each request is then retried alone.
type Func[Req, Res any] func(ctx context.Context, reqs []Req) ([]Outcome[Res], error)

// Defaults of Config.
const (
	DefaultWindow     = 500 * time.Microsecond
	DefaultMaxBatch   = 64
	DefaultFlushers   = 2
	DefaultSmallBatch = 20
)

// Config tunes a Committer.
type Config struct {
	// Window is how long a flusher waits to gather more requests into its
	// transaction. Default 500µs. Negative: no wait — a batch is the
	// requests already queued, which gathered while the previous batches
	// were in flight (the dispatcher's claims and finishes: each waits for
	// a provider call in between, and a wait would only add to it).
	Window time.Duration
	// MaxBatch caps the requests in one transaction. Default 64.
	MaxBatch int
	// Flushers is the number of transactions in flight at once. Default
	// 2: more flushers make smaller batches.
	Flushers int
	// BurstFlushers are transactions in flight besides Flushers while the
	// recent batches are small (a moving average of at most SmallBatch
	// requests): with few concurrent requests a transaction's fixed cost
	// is cheaper than the idle share of transactions that wait on each
	// other's commit. Default 0.
	BurstFlushers int
	// SmallBatch is the recent batch size at or under which
	// BurstFlushers may run. Default 20.
	SmallBatch int
	// Unavailable reports errors that fail every request alike (the
	// database is down or timed out): no request-by-request retry then.
	Unavailable func(error) bool
	// OnBatch observes each committed batch: its size, and how long its
	// transaction took (statements and commit).
	OnBatch func(requests int, took time.Duration)
	Logger  *slog.Logger
	// Name labels log lines ("ingest", "outbound") and names the commit
	// span ("ingest commit").
	Name string
	// Tracer, when set, records one span per committed transaction, linked
	// to the spans of the requests it carries; each request's span gets a
	// link back to it. Nil: no spans (tracing.Tracer).
	Tracer trace.Tracer
	// SpanAttributes are added to every commit span (messaging.system,
	// the operation).
	SpanAttributes []attribute.KeyValue
}

// Committer group-commits requests with a Func.
type Committer[Req, Res any] struct {
	commit Func[Req, Res]
	cfg    Config
	queue  chan *pending[Req, Res]
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.RWMutex
	done   bool
	slots  slots
}

// slots admits flushers, each for one gather-and-commit: Flushers at
// any time, BurstFlushers more while the recent batches are small.
type slots struct {
	mu       sync.Mutex
	inFlight int
	avg      float64       // committed batch sizes, moving average (weight 1/8)
	freed    chan struct{} // closed (and replaced) when a slot is released
}

// acquire waits for a slot. A holder always releases its slot (after
// its batch, or when it stops), so the wait ends.
func (c *Committer[Req, Res]) acquire() {
	s := &c.slots
	for {
		s.mu.Lock()
		limit := c.cfg.Flushers
		if s.avg <= float64(c.cfg.SmallBatch) {
			limit += c.cfg.BurstFlushers
		}
		if s.inFlight < limit {
			s.inFlight++
			s.mu.Unlock()
			return
		}
		if s.freed == nil {
			s.freed = make(chan struct{})
		}
		freed := s.freed
		s.mu.Unlock()
		<-freed
	}
}

// release frees a slot after a batch of n requests (0: none, when
// stopping).
func (c *Committer[Req, Res]) release(n int) {
	s := &c.slots
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if n > 0 {
		s.avg += (float64(n) - s.avg) / 8
	}
	if s.freed != nil {
		close(s.freed)
		s.freed = nil
	}
}

type pending[Req, Res any] struct {
	ctx context.Context
	req Req
	res chan Outcome[Res]
}

// New returns a Committer; call Start.
func New[Req, Res any](commit Func[Req, Res], cfg Config) *Committer[Req, Res] {
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Flushers <= 0 {
		cfg.Flushers = DefaultFlushers
	}
	if cfg.BurstFlushers < 0 {
		cfg.BurstFlushers = 0
	}
	if cfg.SmallBatch <= 0 {
		cfg.SmallBatch = DefaultSmallBatch
	}
	if cfg.Unavailable == nil {
		cfg.Unavailable = func(error) bool { return false }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Committer[Req, Res]{commit: commit, cfg: cfg, queue: make(chan *pending[Req, Res], cfg.MaxBatch*(cfg.Flushers+cfg.BurstFlushers))}
}

// Start runs the flushers.
func (c *Committer[Req, Res]) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	for range c.cfg.Flushers + c.cfg.BurstFlushers {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.flusher(ctx) }()
	}
}

// Stop refuses new requests, commits what is queued, and waits for the
// flushers. Call it after the HTTP server has drained.
func (c *Committer[Req, Res]) Stop() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	if c.stop != nil {
		c.stop()
	}
	c.wg.Wait()
	// Anything still queued was never started: fail it (nothing written).
	for {
		select {
		case p := <-c.queue:
			p.res <- Outcome[Res]{Err: ErrStopped}
		default:
			return
		}
	}
}

// Do commits req (possibly together with concurrent requests) and
// returns once its transaction has committed or failed. It never returns
// a result without a commit. ctx bounds the wait; a request whose ctx
// ends while its batch commits gets ctx's error although the batch may
// still commit (callers make requests idempotent).
func (c *Committer[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	var zero Res
	p := &pending[Req, Res]{ctx: ctx, req: req, res: make(chan Outcome[Res], 1)}
	c.mu.RLock()
	if c.done {
		c.mu.RUnlock()
		return zero, ErrStopped
	}
	select {
	case c.queue <- p:
		c.mu.RUnlock()
	case <-ctx.Done():
		c.mu.RUnlock()
		return zero, ctx.Err()
	}
	select {
	case o := <-p.res:
		if o.commit.IsValid() {
			trace.SpanFromContext(ctx).AddLink(trace.Link{SpanContext: o.commit})
		}
		return o.Res, o.Err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

func (c *Committer[Req, Res]) flusher(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		// A slot first: a burst flusher gathers nothing while the recent
		// batches are large, so the others' batches stay as large.
		c.acquire()
		var first *pending[Req, Res]
		select {
		case first = <-c.queue:
		case <-ctx.Done():
			// Drain what is queued before exiting.
			select {
			case first = <-c.queue:
			default:
				c.release(0)
				return
			}
		}
		batch := []*pending[Req, Res]{first}
		if c.cfg.Window < 0 {
			batch = c.gatherQueued(batch)
		} else {
			timer.Reset(c.cfg.Window)
		collect:
			for len(batch) < c.cfg.MaxBatch {
				select {
				case p := <-c.queue:
					batch = append(batch, p)
				case <-timer.C:
					break collect
				}
			}
			timer.Stop()
		}
		c.flush(batch)
		c.release(len(batch))
	}
}

// gatherQueued adds the requests already queued to batch, up to
// MaxBatch, without waiting for more.
func (c *Committer[Req, Res]) gatherQueued(batch []*pending[Req, Res]) []*pending[Req, Res] {
	for len(batch) < c.cfg.MaxBatch {
		select {
		case p := <-c.queue:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// flush commits a batch; on failure it retries each request alone, so
// only the culprit fails (unless the database itself is unavailable).
func (c *Committer[Req, Res]) flush(batch []*pending[Req, Res]) {
	live := batch[:0]
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			p.res <- Outcome[Res]{Err: err}
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	began := time.Now()
	outs, err := c.run(live)
	if err == nil {
		took := time.Since(began)
		for i, p := range live {
			p.res <- outs[i]
		}
		if c.cfg.OnBatch != nil {
			c.cfg.OnBatch(len(live), took)
		}
		return
	}
	if len(live) == 1 || c.cfg.Unavailable(err) {
		for _, p := range live {
			p.res <- Outcome[Res]{Err: err}
		}
		return
	}
	c.cfg.Logger.Warn(c.cfg.Name+": batch failed; retrying requests one by one", "requests", len(live), "err", err)
	for _, p := range live {
		outs, err := c.run([]*pending[Req, Res]{p})
		if err != nil {
			p.res <- Outcome[Res]{Err: err}
			continue
		}
		p.res <- outs[0]
	}
}

// run calls the Func under the batch's deadline: the latest of its
// requests' (a request whose own deadline passes stops waiting on its
// own).
func (c *Committer[Req, Res]) run(batch []*pending[Req, Res]) ([]Outcome[Res], error) {
	ctx := context.Background()
	var deadline time.Time
	for _, p := range batch {
		if d, ok := p.ctx.Deadline(); ok && d.After(deadline) {
			deadline = d
		}
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	reqs := make([]Req, len(batch))
	for i, p := range batch {
		reqs[i] = p.req
	}
	var span trace.Span
	if c.cfg.Tracer != nil {
		ctx, span = c.startSpan(ctx, batch)
		defer span.End()
	}
	outs, err := c.commit(ctx, reqs)
	if err == nil && len(outs) != len(reqs) {
		err = fmt.Errorf("%s: commit answered %d outcomes for %d requests", c.cfg.Name, len(outs), len(reqs))
	}
	if span != nil {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "commit failed")
		} else {
			sc := span.SpanContext()
			for i := range outs {
				outs[i].commit = sc
			}
		}
	}
	return outs, err
}

// startSpan starts the span of one commit: a root (the transaction serves
// many requests, of as many traces) linked to each request's span, as
// OpenTelemetry's messaging conventions link a batch to its messages.
func (c *Committer[Req, Res]) startSpan(ctx context.Context, batch []*pending[Req, Res]) (context.Context, trace.Span) {
	links := make([]trace.Link, 0, len(batch))
	for _, p := range batch {
		if sc := trace.SpanContextFromContext(p.ctx); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	attrs := append([]attribute.KeyValue{attribute.Int("messaging.batch.message_count", len(batch))}, c.cfg.SpanAttributes...)
	return c.cfg.Tracer.Start(ctx, c.cfg.Name+" commit", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(links...), trace.WithAttributes(attrs...))
}
