package sources

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/tracing"
)

// Store is a channel's channels.SourceStore over the database: tenant
// transactions (row-level security), the lease and cursor tables, and
// the ingest path's dedup for messages.
type Store struct {
	pool        *pgxpool.Pool
	accounts    *accounts.Resolver
	ingester    *ingest.Ingester
	metrics     *metrics.Metrics
	channelType string
	// tracer, when not nil, makes each received message a span
	// (Store.Ingest).
	tracer trace.Tracer
}

var _ channels.SourceStore = (*Store)(nil)

// NewStore returns channelType's store. m counts the messages stored
// (mio_inbound_messages_total, mio_idempotency_dedup_total); nil counts
// nowhere.
func NewStore(pool *pgxpool.Pool, accts *accounts.Resolver, in *ingest.Ingester, m *metrics.Metrics, channelType string) *Store {
	return &Store{pool: pool, accounts: accts, ingester: in, metrics: m, channelType: channelType}
}

// Tenants lists the tenants' ids.
func (s *Store) Tenants(ctx context.Context) ([]uuid.UUID, error) {
	ts, err := db.TenantList(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids, nil
}

// Tx runs fn in one transaction of tenantID.
func (s *Store) Tx(ctx context.Context, tenantID uuid.UUID, fn func(channels.SourceTx) error) error {
	return db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		return fn(&sourceTx{tx: tx, tenantID: tenantID, channelType: s.channelType})
	})
}

// Ingest commits parsed's messages, each with its own Raw, through
// ingest.Ingester.IngestWith (not group-committed), with fn in the same
// transaction. Traced, each message is the root span of its own trace
// (sourceSpans), which it stores as a webhook's message stores its
// request's: its consumers continue that trace.
func (s *Store) Ingest(ctx context.Context, tenantID, accountID uuid.UUID, parsed *channels.Parsed, fn func(channels.SourceTx) error) error {
	spans := s.sourceSpans(ctx, parsed)
	acct := &accounts.Account{ID: accountID, TenantID: tenantID, ChannelType: s.channelType}
	req := ingest.Prepare(acct, parsed, nil, time.Now())
	for i := range req.Messages {
		req.Messages[i].Raw = parsed.Messages[i].Raw
	}
	res, err := s.ingester.IngestWith(ctx, req, func(ctx context.Context, tx pgx.Tx, _ *ingest.Result) error {
		return fn(&sourceTx{tx: tx, tenantID: tenantID, channelType: s.channelType})
	})
	endSourceSpans(spans, req, res, err)
	if err != nil {
		return err
	}
	if s.metrics != nil && len(req.Messages) > 0 {
		s.metrics.InboundMessages.WithLabelValues(s.channelType).Add(float64(len(res.Inserted)))
		s.metrics.DedupTotal.WithLabelValues(s.channelType).Add(float64(res.Duplicates))
	}
	return nil
}

// sourceSpans starts one span per message of parsed when traced: a root
// (the platform sends no trace context), consumer kind (MIO processes a
// message the platform delivered), named "process <channel type>". Each
// message keeps its span's traceparent (envelope trace_id).
func (s *Store) sourceSpans(ctx context.Context, parsed *channels.Parsed) []trace.Span {
	if s.tracer == nil || len(parsed.Messages) == 0 {
		return nil
	}
	spans := make([]trace.Span, len(parsed.Messages))
	for i := range parsed.Messages {
		sctx, span := s.tracer.Start(ctx, "process "+s.channelType, trace.WithNewRoot(),
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
				attribute.String("messaging.system", tracing.System), attribute.String("messaging.operation.type", "process"),
				attribute.String("mio.channel_type", s.channelType)))
		parsed.Messages[i].TraceID = tracing.Traceparent(sctx)
		spans[i] = span
	}
	return spans
}

// endSourceSpans ends the spans of sourceSpans, each with its message's
// id and a link to the commit that stored it.
func endSourceSpans(spans []trace.Span, req *ingest.Request, res *ingest.Result, err error) {
	for i, span := range spans {
		if span.IsRecording() {
			span.SetAttributes(attribute.String("messaging.message.id", req.Messages[i].ID.String()))
			if err != nil {
				span.SetStatus(codes.Error, "not stored")
			} else if res.Commit.IsValid() {
				span.AddLink(trace.Link{SpanContext: res.Commit})
			}
		}
		span.End()
	}
}

// Secrets returns the account with its credentials opened (cached by
// the resolver).
func (s *Store) Secrets(ctx context.Context, tenantID, accountID uuid.UUID) (channels.Account, error) {
	return s.accounts.Secrets(ctx, tenantID, accountID)
}

// Disable sets the account disabled and records reason in its session
// row (mio.gateway_sessions.error) in one transaction, then drops it
// from the account cache.
func (s *Store) Disable(ctx context.Context, tenantID, accountID uuid.UUID, reason string) error {
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		if _, err := db.AccountSetStatus(ctx, tx, tenantID, accountID, db.AccountDisabled); err != nil {
			return err
		}
		return db.GatewayFail(ctx, tx, tenantID, accountID, reason)
	})
	if err != nil {
		return fmt.Errorf("disable account: %w", err)
	}
	s.accounts.Forget(accountID)
	return nil
}

// sourceTx is one tenant transaction as a source sees it.
type sourceTx struct {
	tx          pgx.Tx
	tenantID    uuid.UUID
	channelType string
}

func (t *sourceTx) Accounts(ctx context.Context) ([]channels.SourceAccount, error) {
	accts, err := db.AccountList(ctx, t.tx, t.tenantID, t.channelType)
	if err != nil {
		return nil, err
	}
	out := make([]channels.SourceAccount, len(accts))
	for i, a := range accts {
		out[i] = channels.SourceAccount{TenantID: a.TenantID, ID: a.ID, Active: a.Status == db.AccountActive, Settings: a.Settings}
	}
	return out, nil
}

// leaseHeld translates the lease tables' "not yours" answers.
func leaseHeld(err error) error {
	if errors.Is(err, db.ErrNotFound) || errors.Is(err, db.ErrLeaseHeld) {
		return channels.ErrLeaseHeld
	}
	return err
}

func gatewayLease(l channels.Lease) *db.GatewayLeaseParams {
	return &db.GatewayLeaseParams{TenantID: l.TenantID, AccountID: l.AccountID, Holder: l.Holder, TTL: l.TTL}
}

func (t *sourceTx) SessionAcquire(ctx context.Context, l channels.Lease) (channels.SessionState, error) {
	s, err := db.GatewayLeaseAcquire(ctx, t.tx, gatewayLease(l))
	if err != nil {
		return channels.SessionState{}, leaseHeld(err)
	}
	return channels.SessionState{SessionID: s.SessionID, ResumeURL: s.ResumeURL, Seq: s.Seq}, nil
}

func (t *sourceTx) SessionsHeldElsewhere(ctx context.Context, holder uuid.UUID) ([]uuid.UUID, error) {
	return db.GatewayLeasesHeldByOthers(ctx, t.tx, t.tenantID, holder)
}

func (t *sourceTx) SessionRenew(ctx context.Context, l channels.Lease) error {
	return leaseHeld(db.GatewayLeaseRenew(ctx, t.tx, gatewayLease(l)))
}

func (t *sourceTx) SessionRelease(ctx context.Context, l channels.Lease) error {
	return db.GatewayLeaseRelease(ctx, t.tx, gatewayLease(l))
}

func (t *sourceTx) SessionSave(ctx context.Context, l channels.Lease, s channels.SessionState) error {
	return leaseHeld(db.GatewaySessionSave(ctx, t.tx, &db.GatewaySessionSaveParams{
		TenantID: l.TenantID, AccountID: l.AccountID, Holder: l.Holder,
		SessionID: s.SessionID, ResumeURL: s.ResumeURL, Seq: s.Seq}))
}

func (t *sourceTx) IdentifyTake(ctx context.Context, l channels.Lease, interval time.Duration) (channels.IdentifySlot, error) {
	s, err := db.GatewayIdentifyTake(ctx, t.tx, gatewayLease(l), interval)
	if err != nil {
		return channels.IdentifySlot{}, err
	}
	return channels.IdentifySlot{Wait: s.Wait, Identifies: s.Identifies, WindowLeft: s.WindowLeft}, nil
}

func pollerLease(l channels.Lease) db.TelegramPoller {
	return db.TelegramPoller{TenantID: l.TenantID, AccountID: l.AccountID, Holder: l.Holder, Lease: l.TTL}
}

func (t *sourceTx) OffsetAcquire(ctx context.Context, l channels.Lease) (int64, error) {
	off, err := db.TelegramPollerAcquire(ctx, t.tx, pollerLease(l))
	return off, leaseHeld(err)
}

func (t *sourceTx) OffsetCommit(ctx context.Context, l channels.Lease, next int64) error {
	return leaseHeld(db.TelegramPollerCommit(ctx, t.tx, pollerLease(l), next))
}

func (t *sourceTx) OffsetRelease(ctx context.Context, l channels.Lease) error {
	return db.TelegramPollerRelease(ctx, t.tx, pollerLease(l))
}

func (t *sourceTx) CursorAdvance(ctx context.Context, accountID uuid.UUID, conv envelope.Conversation, sourceID string) error {
	return db.SourceCursorAdvance(ctx, t.tx, t.tenantID, accountID,
		db.SourceCursor{ConversationID: conv.ID, ConversationType: conv.Type, LastSourceID: sourceID})
}

func (t *sourceTx) CursorGapOpen(ctx context.Context, accountID uuid.UUID) error {
	return db.SourceCursorGapOpen(ctx, t.tx, t.tenantID, accountID)
}

func (t *sourceTx) CursorGapBound(ctx context.Context, accountID uuid.UUID, before string) error {
	return db.SourceCursorGapBound(ctx, t.tx, t.tenantID, accountID, before)
}
