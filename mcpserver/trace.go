package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// metaTrace returns ctx continuing the trace context a tool call carries
// in its _meta (traceparent, tracestate: OpenTelemetry's convention for
// MCP), so a reply or send made by the call is kept with the caller's
// trace; ctx as is without one.
func metaTrace(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Params == nil {
		return ctx
	}
	tp, _ := req.Params.Meta["traceparent"].(string)
	if tp == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": tp}
	if ts, _ := req.Params.Meta["tracestate"].(string); ts != "" {
		carrier["tracestate"] = ts
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}
