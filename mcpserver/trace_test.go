package mcpserver_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/mcpserver"
)

// traceBackend records the trace context reply and send_message run
// under; the other methods are not called.
type traceBackend struct {
	mcpserver.Backend
	seen []trace.SpanContext
}

func (b *traceBackend) Reply(ctx context.Context, _ string, _ uuid.UUID, _ envelope.SendCommand) (*mcpserver.Sent, error) {
	b.seen = append(b.seen, trace.SpanContextFromContext(ctx))
	return &mcpserver.Sent{ID: uuid.New(), HandoffState: "queued"}, nil
}

func (b *traceBackend) Send(ctx context.Context, _ envelope.SendCommand) (*mcpserver.Sent, error) {
	b.seen = append(b.seen, trace.SpanContextFromContext(ctx))
	return &mcpserver.Sent{ID: uuid.New(), HandoffState: "queued"}, nil
}

// TestMCPToolsContinueMetaTraceparent: reply and send_message run under
// the trace context of the call's _meta.traceparent.
func TestMCPToolsContinueMetaTraceparent(t *testing.T) {
	t.Parallel()
	b := &traceBackend{}
	srv := mcpserver.New(mcpserver.Options{Backend: func(context.Context, *mcp.RequestExtra) (mcpserver.Backend, error) {
		return b, nil
	}})
	t1, t2 := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, t1, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, t2, nil)
	require.NoError(t, err)
	defer cs.Close()

	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, call := range []*mcp.CallToolParams{
		{Name: "reply", Meta: mcp.Meta{"traceparent": tp}, Arguments: map[string]any{"delivery_id": uuid.NewString(), "text": "hi"}},
		{Name: "send_message", Meta: mcp.Meta{"traceparent": tp}, Arguments: map[string]any{"account_id": uuid.NewString(),
			"conversation_id": "c1", "text": "hi"}},
		{Name: "send_message", Arguments: map[string]any{"account_id": uuid.NewString(), "conversation_id": "c1", "text": "hi"}},
	} {
		res, err := cs.CallTool(ctx, call)
		require.NoError(t, err)
		require.False(t, res.IsError, "%s: %v", call.Name, res.Content)
	}
	require.Len(t, b.seen, 3)
	for _, sc := range b.seen[:2] {
		require.Equal(t, tp[3:35], sc.TraceID().String())
		require.Equal(t, tp[36:52], sc.SpanID().String())
		require.True(t, sc.IsRemote())
	}
	require.False(t, b.seen[2].IsValid(), "no _meta, no trace")
}
