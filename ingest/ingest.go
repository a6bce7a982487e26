// Package ingest commits verified, normalized webhook messages: dedup
// keys, inbox rows, provider receipts and enrich jobs in one transaction.
// Concurrent requests are group-committed — gathered for a fraction of a
// millisecond into one transaction — so one WAL flush serves many
// webhooks; a batch that fails is retried request by request, so one bad
// request never fails its batch-mates.
//
// Internal to MIO; not a stable API.
package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/tracing"
)

// ErrStopped is returned for requests submitted after Stop.
var ErrStopped = groupcommit.ErrStopped

// Request is one webhook's worth of rows, all of one tenant.
type Request struct {
	TenantID uuid.UUID
	Messages []db.InboxRow
	Statuses []db.ProviderEvent
}

// Result says what a request committed.
type Result struct {
	// Inserted are the ids of messages newly stored; the others were
	// redeliveries of stored events.
	Inserted   []uuid.UUID
	Duplicates int
	// NewStatuses counts receipts not seen before.
	NewStatuses int64
	// Commit is the span of the transaction that stored the request, when
	// IngestWith traced it: callers link their messages' spans to it.
	Commit trace.SpanContext
}

// Defaults of Config, measured with mio-bench ingest (docs/benchmarks.md).
// mio serve's MIO_INGEST_FLUSHERS, MIO_INGEST_BURST_FLUSHERS and
// MIO_INGEST_WINDOW default to the same.
const (
	DefaultWindow        = 500 * time.Microsecond
	DefaultFlushers      = 2
	DefaultBurstFlushers = 1
)

// Config tunes group commit.
type Config struct {
	// Window is how long a flusher waits to gather more requests into its
	// transaction. Default 500µs (DefaultWindow).
	Window time.Duration
	// MaxBatch caps the requests in one transaction. Default 64.
	MaxBatch int
	// Flushers is the number of transactions in flight at once. Default 2
	// (DefaultFlushers): more flushers make smaller batches.
	Flushers int
	// BurstFlushers are transactions in flight besides Flushers while the
	// recent ones carry few webhooks (groupcommit.Config.BurstFlushers).
	// Default 1 (DefaultBurstFlushers); negative: none.
	BurstFlushers int
	// River inserts enrich jobs in the same transaction; nil skips them
	// (messages with attachments then stay in state received).
	River *river.Client[pgx.Tx]
	// OnCommit is called after each commit with the tenants that got new
	// messages (wake-ups).
	OnCommit func(tenantID uuid.UUID)
	// OnBatch observes each committed batch's size and how long its
	// transaction took.
	OnBatch func(requests int, took time.Duration)
	Logger  *slog.Logger
	// Tracer records a span per commit, linked to the webhook requests it
	// carries (groupcommit.Config.Tracer). Nil: no spans.
	Tracer trace.Tracer
}

// Ingester group-commits requests.
type Ingester struct {
	pool *pgxpool.Pool
	cfg  Config
	gc   *groupcommit.Committer[*Request, *Result]
	// spanAttrs are the attributes of a commit's span.
	spanAttrs []attribute.KeyValue
}

// New returns an Ingester; call Start.
func New(pool *pgxpool.Pool, cfg Config) *Ingester {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Flushers == 0 {
		cfg.Flushers = DefaultFlushers
	}
	if cfg.BurstFlushers == 0 {
		cfg.BurstFlushers = DefaultBurstFlushers
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	in := &Ingester{pool: pool, cfg: cfg, spanAttrs: []attribute.KeyValue{attribute.String("messaging.system", tracing.System),
		attribute.String("messaging.operation.type", "send"), attribute.String("messaging.destination.name", "inbox"),
		attribute.String("db.system.name", "postgresql")}}
	in.gc = groupcommit.New(in.commit, groupcommit.Config{Window: cfg.Window, MaxBatch: cfg.MaxBatch,
		Flushers: cfg.Flushers, BurstFlushers: cfg.BurstFlushers, Unavailable: db.IsUnavailable, OnBatch: cfg.OnBatch, Logger: cfg.Logger, Name: "ingest",
		Tracer: cfg.Tracer, SpanAttributes: in.spanAttrs})
	return in
}

// Start runs the flushers.
func (in *Ingester) Start() { in.gc.Start() }

// Stop refuses new requests, commits what is queued, and waits for the
// flushers. Call it after the HTTP server has drained.
func (in *Ingester) Stop() { in.gc.Stop() }

// Ingest commits req (possibly together with concurrent requests) and
// returns once its transaction has committed or failed. It never returns a
// result without a commit. ctx bounds the wait: when it ends first the
// batch may still commit, and the platform's redelivery then
// deduplicates.
func (in *Ingester) Ingest(ctx context.Context, req *Request) (*Result, error) {
	if len(req.Messages) == 0 && len(req.Statuses) == 0 {
		return &Result{}, nil
	}
	return in.gc.Do(ctx, req)
}

func (in *Ingester) commit(ctx context.Context, batch []*Request) ([]groupcommit.Outcome[*Result], error) {
	// Group requests by tenant: row-level security sees one tenant per
	// statement, so each tenant's rows go in their own statement.
	order := []uuid.UUID{}
	byTenant := map[uuid.UUID][]int{}
	for i, p := range batch {
		t := p.TenantID
		if _, ok := byTenant[t]; !ok {
			order = append(order, t)
		}
		byTenant[t] = append(byTenant[t], i)
	}

	results := make([]*Result, len(batch))
	for i := range results {
		results[i] = &Result{}
	}
	groups := make([]db.IngestGroup, len(order))
	owner := map[uuid.UUID]int{}
	needsEnrich := false
	for n, tenant := range order {
		groups[n].TenantID = tenant
		for _, i := range byTenant[tenant] {
			for _, m := range batch[i].Messages {
				owner[m.ID] = i
				groups[n].Rows = append(groups[n].Rows, m)
				needsEnrich = needsEnrich || (m.State == db.InboxReceived && in.cfg.River != nil)
			}
			groups[n].Events = append(groups[n].Events, batch[i].Statuses...)
		}
	}
	var (
		committed []db.IngestGroupResult
		err       error
	)
	if needsEnrich {
		committed, err = in.commitWithJobs(ctx, groups)
	} else {
		// The common case: one pipelined round trip.
		committed, err = db.IngestCommit(ctx, in.pool, groups)
	}
	if err != nil {
		return nil, err
	}
	for n, g := range groups {
		inserted := make(map[uuid.UUID]bool, len(committed[n].Inserted))
		for _, id := range committed[n].Inserted {
			inserted[id] = true
			results[owner[id]].Inserted = append(results[owner[id]].Inserted, id)
		}
		for _, r := range g.Rows {
			if !inserted[r.ID] {
				results[owner[r.ID]].Duplicates++
			}
		}
		// Receipts have no per-request answer: attribute them to the
		// group's first request.
		results[byTenant[g.TenantID][0]].NewStatuses += committed[n].NewEvents
	}
	if in.cfg.OnCommit != nil {
		for _, tenant := range order {
			for _, i := range byTenant[tenant] {
				if len(results[i].Inserted) > 0 {
					in.cfg.OnCommit(tenant)
					break
				}
			}
		}
	}
	outs := make([]groupcommit.Outcome[*Result], len(results))
	for i, r := range results {
		outs[i].Res = r
	}
	return outs, nil
}

// commitWithJobs commits groups in a transaction that also enqueues an
// enrich job for every newly inserted message with pending attachments.
func (in *Ingester) commitWithJobs(ctx context.Context, groups []db.IngestGroup) ([]db.IngestGroupResult, error) {
	tx, err := db.BeginTenant(ctx, in.pool, groups[0].TenantID)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	out := make([]db.IngestGroupResult, len(groups))
	for n, g := range groups {
		if n > 0 {
			if err := db.SetTenant(ctx, tx, g.TenantID); err != nil {
				return nil, err
			}
		}
		if out[n], err = in.writeGroup(ctx, tx, g); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// writeGroup writes one tenant's rows in tx (its tenant already set) and
// enqueues their enrich jobs there.
func (in *Ingester) writeGroup(ctx context.Context, tx pgx.Tx, g db.IngestGroup) (db.IngestGroupResult, error) {
	var out db.IngestGroupResult
	var enrich []river.InsertManyParams
	if len(g.Rows) > 0 {
		ids, err := db.InboxInsertBatch(ctx, tx, g.TenantID, g.Rows)
		if err != nil {
			return out, fmt.Errorf("insert inbox: %w", err)
		}
		out.Inserted = ids
		inserted := make(map[uuid.UUID]bool, len(ids))
		for _, id := range ids {
			inserted[id] = true
		}
		for _, r := range g.Rows {
			if inserted[r.ID] && r.State == db.InboxReceived && in.cfg.River != nil {
				p := river.InsertManyParams{Args: jobs.EnrichArgs{TenantID: g.TenantID, MessageID: r.ID}}
				if in.cfg.Tracer != nil {
					// The job's run continues the message's trace.
					p.InsertOpts = jobs.TraceOpts(string(envelope.StoredTraceparent(r.Envelope)))
				}
				enrich = append(enrich, p)
			}
		}
	}
	if len(g.Events) > 0 {
		var err error
		if out.NewEvents, err = db.ProviderEventInsertBatch(ctx, tx, g.TenantID, g.Events); err != nil {
			return out, fmt.Errorf("insert provider events: %w", err)
		}
	}
	if len(enrich) > 0 {
		if _, err := in.cfg.River.InsertManyTx(ctx, tx, enrich); err != nil {
			return out, fmt.Errorf("enqueue enrich jobs: %w", err)
		}
	}
	return out, nil
}

// IngestWith commits req alone, in its own tenant transaction, together
// with the caller's writes: also runs in that transaction after the rows
// (and their enrich jobs) are written and sees which messages were new.
// An error from also rolls everything back. Intakes that keep a position
// with their messages (the Discord Gateway's sequence, a reconciler's
// cursor) use it instead of the group commit of Ingest. When traced and
// a message carries a trace context, the transaction is an "ingest
// commit" span like a group commit's, linked to those contexts
// (Result.Commit).
func (in *Ingester) IngestWith(ctx context.Context, req *Request, also func(ctx context.Context, tx pgx.Tx, res *Result) error) (*Result, error) {
	res := &Result{}
	ctx, span := in.commitSpan(ctx, req)
	defer span.End()
	res.Commit = span.SpanContext()
	res, err := in.ingestWith(ctx, req, res, also)
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, "commit failed")
	}
	return res, err
}

// commitSpan starts the span of IngestWith's transaction: a root linked
// to the trace context each message stores (the span of the source that
// received it), as the group commit links its requests. Without a tracer
// or a traced message it is a no-op span.
func (in *Ingester) commitSpan(ctx context.Context, req *Request) (context.Context, trace.Span) {
	if in.cfg.Tracer == nil {
		return ctx, noop.Span{}
	}
	var links []trace.Link
	for _, m := range req.Messages {
		if sc := tracing.Remote(string(envelope.StoredTraceparent(m.Envelope))); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	if len(links) == 0 {
		return ctx, noop.Span{}
	}
	attrs := append([]attribute.KeyValue{attribute.Int("messaging.batch.message_count", len(req.Messages))}, in.spanAttrs...)
	return in.cfg.Tracer.Start(ctx, "ingest commit", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(links...), trace.WithAttributes(attrs...))
}

func (in *Ingester) ingestWith(ctx context.Context, req *Request, res *Result, also func(ctx context.Context, tx pgx.Tx, res *Result) error) (*Result, error) {
	tx, err := db.BeginTenant(ctx, in.pool, req.TenantID)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if len(req.Messages) > 0 || len(req.Statuses) > 0 {
		g, err := in.writeGroup(ctx, tx, db.IngestGroup{TenantID: req.TenantID, Rows: req.Messages, Events: req.Statuses})
		if err != nil {
			return nil, err
		}
		res.Inserted, res.NewStatuses = g.Inserted, g.NewEvents
		res.Duplicates = len(req.Messages) - len(g.Inserted)
	}
	if also != nil {
		if err := also(ctx, tx, res); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	if len(res.Inserted) > 0 && in.cfg.OnCommit != nil {
		in.cfg.OnCommit(req.TenantID)
	}
	return res, nil
}
