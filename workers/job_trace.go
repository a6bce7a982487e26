package workers

import (
	"context"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/tracing"
)

// Job spans. With tracing on, every job run is a span of River's
// otelriver middleware ("river.work/<kind>", consumer: kind, attempt,
// queue and the outcome as attributes, an error as its status). It would
// start that span under the context River's work loop has, which has
// none: otelriver's own propagation only links a run to the span that
// inserted the job, and that span is a group commit's, a root of its own
// trace. So jobParent runs first and gives the run the trace context the
// job carries in its metadata (jobs.TraceOpts: the message's or the
// outbound row's), which makes the run's span a child of the message's
// trace: webhook, enrich and dispatch are one trace. A job without one
// (periodic jobs, a dispatch job the outbox sweeper inserted) is a root.

// jobMiddleware is the River middleware that traces job runs, or nil when
// tp records nothing (no middleware, nothing allocated per job).
func jobMiddleware(tp trace.TracerProvider) []rivertype.Middleware {
	if tracing.Tracer(tp) == nil {
		return nil
	}
	return []rivertype.Middleware{&jobParent{}, otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider: tp, MeterProvider: metricnoop.NewMeterProvider(), EnableWorkSpanJobKindSuffix: true})}
}

// jobParent gives a job run the trace context of its metadata as its
// remote parent.
type jobParent struct {
	river.MiddlewareDefaults
}

func (*jobParent) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	return doInner(tracing.WithRemote(ctx, jobs.Traceparent(job.Metadata)))
}
