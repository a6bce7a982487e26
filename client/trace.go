package client

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext is the W3C trace context format MIO speaks.
var traceContext propagation.TraceContext

// WithTracerProvider makes Consume start each handler's span (a consumer
// span, "process <consumer>") from its delivery's trace context, so the
// handler's work, and the reply it sends under that ctx, continue the
// trace of the message. Default none: Consume starts no span (a handler
// can still call Delivery.Context).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *Client) { c.tracer = tp.Tracer("github.com/miohq/mio/client") }
}

// Context returns ctx carrying the trace context the delivery's message
// was received under (Traceparent) as its remote parent: a span started
// from it is a child of MIO's span of the inbound message. ctx as is when
// the delivery has none (MIO does not trace).
func (d Delivery) Context(ctx context.Context) context.Context {
	if d.Traceparent == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": d.Traceparent})
}

// injectTrace sets the traceparent header of a request made under a
// traced ctx: MIO keeps it with a reply or send, whose hand-off to the
// platform then joins the same trace.
func injectTrace(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		traceContext.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// startHandlerSpan starts the handler span of d when the client traces.
func (c *Client) startHandlerSpan(ctx context.Context, consumer string, d Delivery) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, nil
	}
	return c.tracer.Start(d.Context(ctx), "process "+consumer, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "mio"), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.subscription.name", consumer),
			attribute.String("messaging.message.id", d.Message.ID.String()),
			attribute.Int("messaging.message.delivery_count", d.DeliveryCount)))
}

// endHandlerSpan records the handler's outcome on its span.
func endHandlerSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
