// Package mcpserver is MIO's MCP (Model Context Protocol) server: the
// tools an agent pulls, settles, answers and reads messages with, and the
// resources mio://messages/{id} and mio://attachments/{id}, over a
// Backend. Two transports serve the same server: Streamable HTTP at /mcp
// on the public listener (package httpapi, a backend running the services
// in process under the request's API token) and stdio (`mio mcp`, with
// ClientBackend calling a MIO server over HTTP).
//
// Internal to MIO; not a stable API.
package mcpserver

import (
	"context"
	"errors"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure New.
type Options struct {
	// Backend returns the backend serving one request (the HTTP
	// transport's depends on the request's token). Required.
	Backend func(ctx context.Context, extra *mcp.RequestExtra) (Backend, error)
	// Logger records internal failures (never arguments or tokens).
	// Default: discard.
	Logger *slog.Logger
	// Version is the server version reported at initialization. Default
	// "dev".
	Version string
}

// server holds the tool and resource handlers.
type server struct {
	backend func(ctx context.Context, extra *mcp.RequestExtra) (Backend, error)
	log     *slog.Logger
}

// New returns the MCP server with every tool and resource.
func New(opts Options) *mcp.Server {
	srv, _, _ := build(opts)
	return srv
}

// build returns the MCP server, its tools' handlers by name and what it
// reports about itself.
func build(opts Options) (*mcp.Server, *toolSet, *mcp.Implementation) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &server{backend: opts.Backend, log: opts.Logger}
	impl := &mcp.Implementation{Name: "mio", Title: "MIO", Version: opts.Version}
	srv := mcp.NewServer(impl, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
	})
	tools := &toolSet{srv: srv, handlers: map[string]mcp.ToolHandler{}}
	s.addTools(tools)
	s.addResources(srv)
	srv.AddReceivingMiddleware(encodeResults)
	return srv, tools, impl
}

// instructions tell the model how the tools fit together.
const instructions = `MIO connects chat platforms (Slack, Telegram, Discord, WhatsApp, Zoho Cliq, webhooks) to you.
Loop: pull_messages, then answer each delivery with reply (it sends your answer and acknowledges the delivery
in one step), or settle it with ack_messages (done, no answer) or release_messages (give it back for later).
Settle or reply before lease_expires_at, or call extend_lease while you work: an expired lease is delivered
again under a new delivery_id, and replying to the old one fails with nothing sent.
conversation_history shows the earlier messages of a conversation in both directions; attachments are
resources at their uri (mio://attachments/{id}).`

// fail turns a backend error into the tool's error: an *Error as it is,
// anything else logged and reported as an internal failure without its
// details.
func (s *server) fail(ctx context.Context, tool string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Errorf(CodeUnavailable, "%s: the request was cancelled or timed out; call it again", tool)
	}
	s.log.ErrorContext(ctx, "mcp tool failed", "tool", tool, "err", err)
	return Errorf(CodeUnavailable, "%s: MIO could not complete the request (internal error); call it again later", tool)
}
