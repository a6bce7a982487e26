package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool registers a typed tool as mcp.AddTool does — the arguments are
// validated against the tool's input schema and decoded into In, an error
// is a tool error, the output is the structured content and, serialized,
// its text content — except that:
//
//   - The output is not validated against the tool's output schema on
//     every call. The SDK does that by decoding the output into maps,
//     validating them and encoding them again: for a pull of 100 messages
//     that was about half of the server's CPU (`mio-bench mcp`, pprof), and
//     the output is a Go type of this package whose schema is inferred from
//     it. Instead, every tool call of the package's tests validates its
//     output against the schema tools/list advertises (call, stack_test.go).
//   - The output is encoded once, with encoding/json/v2's engine set to
//     encoding/json's behaviour (the same bytes, in less time), and the
//     same bytes are the structured content (raw) and the text block;
//     wireResult writes both without encoding them again.
//   - The input schema is registered as its JSON: the Streamable HTTP
//     transport reads every tool's schema on every call (for parameter
//     headers), and encoding a *jsonschema.Schema each time was 3 to 6 %
//     of the server's CPU of a pull.
func addTool[In, Out any](srv toolAdder, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	schema, ok := t.InputSchema.(*jsonschema.Schema)
	if !ok {
		panic("mcpserver: input schema of " + t.Name + " is not a *jsonschema.Schema")
	}
	in, err := schema.Resolve(nil)
	if err != nil {
		panic("mcpserver: input schema of " + t.Name + ": " + err.Error())
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		panic("mcpserver: input schema of " + t.Name + ": " + err.Error())
	}
	t.InputSchema = json.RawMessage(raw)
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]any{}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return toolError(fmt.Errorf("validating \"arguments\": unmarshaling arguments: %w", err)), nil
			}
		}
		if err := in.Validate(args); err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		var v In
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &v); err != nil {
				return toolError(err), nil
			}
		}
		res, out, err := h(ctx, req, v)
		if err != nil {
			if wire, ok := err.(*jsonrpc.Error); ok {
				return nil, wire
			}
			return toolError(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		b, err := jsonv2.Marshal(out, jsonv1.DefaultOptionsV1())
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	})
}

// toolAdder registers a tool: the SDK server, or toolSet.
type toolAdder interface {
	AddTool(t *mcp.Tool, h mcp.ToolHandler)
}

// toolSet registers tools with the SDK server and keeps their handlers by
// name for the HTTP transport's direct path (direct.go).
type toolSet struct {
	srv      *mcp.Server
	handlers map[string]mcp.ToolHandler
}

func (ts *toolSet) AddTool(t *mcp.Tool, h mcp.ToolHandler) {
	ts.srv.AddTool(t, h)
	ts.handlers[t.Name] = h
}

func toolError(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}
