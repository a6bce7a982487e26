package workers_test

import (
	"context"
	"errors"
	"testing"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/workers"
)

// TestJobRunContinuesItsTrace: with tracing on, a job run is otelriver's
// consumer span, a child of the traceparent its job's metadata carries
// (not a root linked to the inserting transaction), with the job's kind,
// queue and attempt, and its error as the status; a job without one is a
// root. With tracing off no middleware is installed.
func TestJobRunContinuesItsTrace(t *testing.T) {
	t.Parallel()
	require.Nil(t, workers.JobMiddleware(nil))
	require.Nil(t, workers.JobMiddleware(noop.NewTracerProvider()))

	rec := tracetest.NewSpanRecorder()
	mws := workers.JobMiddleware(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	run := func(job *rivertype.JobRow, err error) {
		t.Helper()
		// River runs the first middleware outermost.
		work := func(ctx context.Context) error { return err }
		for i := len(mws) - 1; i >= 0; i-- {
			mw, inner := mws[i].(rivertype.WorkerMiddleware), work
			work = func(ctx context.Context) error { return mw.Work(ctx, job, inner) }
		}
		require.ErrorIs(t, work(context.Background()), err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	opts := jobs.TraceOpts(tp)
	require.NotNil(t, opts)
	require.Equal(t, tp, jobs.Traceparent(opts.Metadata))
	require.Nil(t, jobs.TraceOpts(""), "untraced: the job's own options")

	failed := errors.New("platform down")
	run(&rivertype.JobRow{ID: 7, Kind: "mio.enrich", Queue: "enrich", Attempt: 2, Metadata: opts.Metadata}, failed)
	run(&rivertype.JobRow{ID: 8, Kind: "mio.archive", Queue: "maintenance", Attempt: 1, Metadata: []byte(`{}`)}, nil)

	spans := rec.Ended()
	require.Len(t, spans, 2)
	child, root := spans[0], spans[1]
	require.Equal(t, "river.work/mio.enrich", child.Name())
	require.Equal(t, trace.SpanKindConsumer, child.SpanKind())
	require.Equal(t, tp[3:35], child.SpanContext().TraceID().String(), "the message's trace")
	require.Equal(t, tp[36:52], child.Parent().SpanID().String(), "a child, not a link")
	require.Empty(t, child.Links())
	attrs := map[string]string{}
	for _, a := range child.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	require.Equal(t, "mio.enrich", attrs["kind"])
	require.Equal(t, "enrich", attrs["queue"])
	require.Equal(t, "2", attrs["attempt"])
	require.Equal(t, codes.Error, child.Status().Code)
	require.Equal(t, "river.work/mio.archive", root.Name())
	require.False(t, root.Parent().IsValid(), "no trace context: a root")
}
