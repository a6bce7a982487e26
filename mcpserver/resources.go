package mcpserver

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addResources registers the resource templates.
func (s *server) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mio://messages/{id}", Name: "message", Title: "Inbound message",
		Description: "An inbound message as JSON (the envelope without its raw platform payload). Needs the read or consume role.",
		MIMEType:    "application/json"}, s.readMessage)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mio://attachments/{id}", Name: "attachment", Title: "Attachment",
		Description: "The stored bytes of an inbound message's attachment (attachments[].uri), with its MIME type. " +
			"Needs the read or consume role."}, s.readAttachment)
}

// resourceError is a resource read's protocol error: not found for a
// missing or foreign object, invalid params for a bad id, the *Error's
// text otherwise.
func (s *server) resourceError(ctx context.Context, uri string, err error) error {
	err = s.fail(ctx, "resources/read", err)
	switch {
	case hasCode(err, CodeNotFound):
		return mcp.ResourceNotFoundError(uri)
	case hasCode(err, CodeBadRequest):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	default:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
}

func (s *server) readMessage(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, err := parseID("id", strings.TrimPrefix(uri, "mio://messages/"))
	if err != nil {
		return nil, s.resourceError(ctx, uri, err)
	}
	b, err := s.backend(ctx, req.Extra)
	if err != nil {
		return nil, s.resourceError(ctx, uri, err)
	}
	m, err := b.Message(ctx, id)
	if err != nil {
		return nil, s.resourceError(ctx, uri, err)
	}
	text, err := json.Marshal(messageOf(m))
	if err != nil {
		return nil, s.resourceError(ctx, uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(text)}}}, nil
}

func (s *server) readAttachment(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, err := parseID("id", strings.TrimPrefix(uri, "mio://attachments/"))
	if err != nil {
		return nil, s.resourceError(ctx, uri, err)
	}
	b, err := s.backend(ctx, req.Extra)
	if err != nil {
		return nil, s.resourceError(ctx, uri, err)
	}
	a, err := b.Attachment(ctx, id)
	if err != nil {
		return nil, s.resourceError(ctx, uri, err)
	}
	mt := a.MimeType
	if mt == "" {
		mt = "application/octet-stream"
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mt, Blob: a.Data}}}, nil
}
