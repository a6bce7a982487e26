package client_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/client"
)

// A handler continues the trace its message was received under: its span
// is a child of MIO's span of the inbound message, and the reply sent
// under the span's context carries its traceparent, so MIO's hand-off of
// the reply to the platform joins the same trace. (Consume does this by
// itself with client.WithTracerProvider.)
func ExampleDelivery_Context() {
	d := client.Delivery{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	ctx := d.Context(context.Background())
	// ctx, span := tracer.Start(ctx, "handle message", trace.WithSpanKind(trace.SpanKindConsumer))
	// defer span.End()
	// c.Reply(ctx, "agent", d.DeliveryID, envelope.SendCommand{...})
	sc := trace.SpanContextFromContext(ctx)
	fmt.Println(sc.TraceID(), sc.SpanID(), sc.IsRemote())
	// Output: 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 true
}
