package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/outbox"
)

// TestDispatchRunJoinsItsRowsTrace: a traced dispatch job's run is
// otelriver's span, a child of the traceparent of the request that
// queued its row (carried in the job's metadata), with an attempt span
// under it; a job that lost that metadata (as one the outbox sweeper
// inserts) is a root linked to its row's stored context instead.
func TestDispatchRunJoinsItsRowsTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutBundle(t, outOpts{noStart: true})
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const stored = "00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01"
	rows := []db.OutboxNew{
		{ID: uuid.New(), AccountID: b.accounts["telegram"], ChannelType: "telegram", ConversationID: "c1",
			IdempotencyKey: uuid.NewString(), RequestSHA256: make([]byte, 32), Text: "carried", Traceparent: carried},
		{ID: uuid.New(), AccountID: b.accounts["slack"], ChannelType: "slack", ConversationID: "c2",
			IdempotencyKey: uuid.NewString(), RequestSHA256: make([]byte, 32), Text: "stored", Traceparent: stored},
	}
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := outbox.New(b.env.Pool, b.clients[0]).EnqueueTx(ctx, tx, b.tenant, rows)
		return err
	}))
	_, err := b.owner.Exec(ctx, `UPDATE river.river_job SET metadata = '{}' WHERE id = $1`, rows[1].JobID)
	require.NoError(t, err)

	rec := tracetest.NewSpanRecorder()
	b.newClient(t, outOpts{tracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))}, true)
	b.waitTerminal(t, []uuid.UUID{rows[0].ID, rows[1].ID}, 20*time.Second)

	runs := map[string]sdktrace.ReadOnlySpan{}
	var sends []sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "river.work/mio.dispatch":
				for _, a := range s.Attributes() {
					if a.Key == "messaging.message.id" {
						runs[a.Value.AsString()] = s
					}
				}
			case "send":
				sends = append(sends, s)
			}
		}
		return len(runs) == 2
	}, 10*time.Second, 20*time.Millisecond)

	run := runs[rows[0].ID.String()]
	require.Equal(t, trace.SpanKindConsumer, run.SpanKind())
	require.Equal(t, carried[3:35], run.SpanContext().TraceID().String())
	require.Equal(t, carried[36:52], run.Parent().SpanID().String(), "the queuing request's span is the run's parent")
	var under bool
	for _, s := range sends {
		under = under || s.Parent().SpanID() == run.SpanContext().SpanID()
	}
	require.True(t, under, "the attempt is under the run")

	lost := runs[rows[1].ID.String()]
	require.False(t, lost.Parent().IsValid(), "no carried context: a root")
	require.Len(t, lost.Links(), 1)
	require.Equal(t, stored[3:35], lost.Links()[0].SpanContext.TraceID().String(), "linked to the row's stored context")
}
