package httpapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/mcpserver"
	"github.com/miohq/mio/outbox"
)

// TestMCPOutboxErrors: the send path's refusals reach an MCP client as
// tool errors with the code POST /v1/outbound's answer implies, not as
// internal errors.
func TestMCPOutboxErrors(t *testing.T) {
	t.Parallel()
	b := &mcpServices{}
	for _, c := range []struct {
		name string
		err  error
		code string
	}{
		{"text over the limit", &outbox.TooLargeError{Field: "text_delta", Limit: 64 << 10}, mcpserver.CodeBadRequest},
		{"a finish with nothing to show", outbox.ErrStreamEmpty, mcpserver.CodeBadRequest},
		{"out of order", &outbox.StreamSeqError{Expected: 2, Got: 3}, mcpserver.CodeConflict},
		{"finished", outbox.ErrStreamFinished, mcpserver.CodeConflict},
	} {
		var e *mcpserver.Error
		require.True(t, errors.As(b.outboxError(c.err), &e), c.name)
		require.Equal(t, c.code, e.Code, c.name)
	}
}
