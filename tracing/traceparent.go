package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Traceparent is ctx's span context as a W3C traceparent header value
// ("00-<trace id>-<span id>-<flags>"), or "" when ctx has no valid one.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	flags := "00"
	if sc.IsSampled() {
		flags = "01"
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + flags
}

// Remote returns the span context a traceparent value names (remote, as
// read from a stored row or a header); invalid values give an invalid
// (zero) span context.
func Remote(traceparent string) trace.SpanContext {
	if len(traceparent) != 55 || traceparent[:3] != "00-" || traceparent[35] != '-' || traceparent[52] != '-' {
		return trace.SpanContext{}
	}
	tid, err := trace.TraceIDFromHex(traceparent[3:35])
	if err != nil {
		return trace.SpanContext{}
	}
	sid, err := trace.SpanIDFromHex(traceparent[36:52])
	if err != nil {
		return trace.SpanContext{}
	}
	var flags trace.TraceFlags
	switch traceparent[53:] {
	case "01":
		flags = trace.FlagsSampled
	case "00":
	default:
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
}

// WithRemote returns ctx carrying the span context traceparent names as
// its remote parent; ctx as is when traceparent is empty or invalid.
func WithRemote(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	sc := Remote(traceparent)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
