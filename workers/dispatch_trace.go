package workers

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/tracing"
)

// Dispatch spans. A dispatch job's run is River's span
// ("river.work/mio.dispatch", job_trace.go), a child of the trace context
// its job carries (the request that queued its row), so an agent's reply
// and its hand-off to the platform are one trace; jobSpan adds the row's
// attributes. Under it: each wait for a rate limit ("rate limit wait")
// and each attempt ("send", whose platform call is a client span, see
// channels.CallAPI). An attempt at another row (an extra, the next row of
// a lane) is parented by that row's own stored context. Without a tracer
// nothing here runs: the stored context is read only while tracing is on.

// tracedRow marks ctx as carrying the job span of outbox row id.
type tracedRow struct{}

// jobSpan annotates the span of a dispatch job's run for row id. A job
// that carries no trace context (one the outbox sweeper or a group's
// reschedule inserted) links its row's stored context instead.
func (d *Dispatcher) jobSpan(ctx context.Context, tenantID, id uuid.UUID, carried bool) context.Context {
	span := trace.SpanFromContext(ctx)
	if d.tracer == nil || !span.IsRecording() {
		return ctx
	}
	span.SetAttributes(attribute.String("messaging.system", tracing.System), attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.destination.name", "outbox"), attribute.String("messaging.message.id", id.String()))
	if !carried {
		if sc := trace.SpanContextFromContext(d.storedContext(ctx, tenantID, id)); sc.IsValid() && sc.IsRemote() {
			span.AddLink(trace.Link{SpanContext: sc})
		}
	}
	return context.WithValue(ctx, tracedRow{}, id)
}

// attemptSpan starts the span of one attempt at row c: under the job's
// span when the row is the job's own, else under the row's stored context.
func (d *Dispatcher) attemptSpan(ctx context.Context, tenantID uuid.UUID, c *db.ClaimCandidate, op string) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, noop.Span{}
	}
	if own, _ := ctx.Value(tracedRow{}).(uuid.UUID); own != c.ID {
		ctx = d.storedContext(ctx, tenantID, c.ID)
	}
	return d.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("messaging.system", tracing.System), attribute.String("messaging.message.id", c.ID.String()),
		attribute.String("mio.channel_type", c.ChannelType), attribute.Int("mio.attempt", c.AttemptNo)))
}

// waitSpan starts the span of a wait under ctx's span (the job's): "rate
// limit wait" for a token bucket ("bucket") or a platform's Retry-After
// ("provider"), "lane wait" behind an earlier message of the
// conversation ("lane"); a no-op span when not traced.
func waitSpan(ctx context.Context, reason string) trace.Span {
	name := "rate limit wait"
	if reason == "lane" {
		name = "lane wait"
	}
	_, span := tracing.Child(ctx, name, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("mio.wait.reason", reason))
	}
	return span
}

// endAttempt records an attempt's outcome on its span.
func endAttempt(span trace.Span, outcome string, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("mio.outcome", outcome))
		if err != nil {
			span.SetStatus(codes.Error, outcome)
		}
	}
	span.End()
}

// storedContext returns ctx with row id's stored trace context as its
// remote parent; ctx as is when the row has none or it cannot be read (a
// trace is never worth failing a send).
func (d *Dispatcher) storedContext(ctx context.Context, tenantID, id uuid.UUID) context.Context {
	var tp map[uuid.UUID]string
	err := db.InTenantTx(ctx, d.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		tp, err = db.OutboxTraceparents(ctx, tx, tenantID, []uuid.UUID{id})
		return err
	})
	if err != nil {
		d.cfg.Logger.Debug("dispatch: trace context not read", "message_id", id, "err", err)
		return ctx
	}
	return tracing.WithRemote(ctx, tp[id])
}
