package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeResults makes every tools/call result encode itself in one pass
// (wireResult). The SDK's own encoding of a result goes through
// encoding/json three times before its JSON-RPC envelope does: the text
// block is quoted into JSON, then that block and the structured content
// are each validated and compacted as a Marshaler's output, then the
// whole result is; for a pull of 100 messages that was a fifth of the
// server's CPU (`mio-bench mcp`, pprof). The JSON-RPC layer's own two
// passes (the result as a Marshaler, then as the response's raw result)
// remain: half of the server's CPU of a pull, out of this package's reach.
func encodeResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r != nil {
			return wireResult{r}, nil
		}
		return res, err
	}
}

// wireResult is a tool result that writes its own JSON. Everything but
// the content and the structured content — _meta, isError and what the
// SDK sets after the handler (the protocol's resultType) — is written as
// the SDK writes it, so the result on the wire is the SDK's, member for
// member (TestWireResultMatchesSDK).
type wireResult struct {
	*mcp.CallToolResult
}

// MarshalJSON writes {"content":[…],"structuredContent":…, the rest}:
// a text block's text quoted once, raw structured content as it is.
func (r wireResult) MarshalJSON() ([]byte, error) {
	rest := *r.CallToolResult
	rest.Content, rest.StructuredContent = nil, nil
	others, err := rest.MarshalJSON()
	if err != nil {
		return nil, err
	}
	size := 64 + len(others)
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			size += len(t.Text) + len(t.Text)/8 + 32
		}
	}
	raw, isRaw := r.StructuredContent.(json.RawMessage)
	size += len(raw)
	b := make([]byte, 0, size)
	if r.Content == nil {
		b = append(b, `{"content":null`...)
	} else {
		b = append(b, `{"content":[`...)
		for i, c := range r.Content {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendContent(b, c); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	switch {
	case isRaw && len(raw) > 0:
		b = append(append(b, `,"structuredContent":`...), raw...)
	case !isRaw && r.StructuredContent != nil:
		sc, err := json.Marshal(r.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("marshaling structured content: %w", err)
		}
		b = append(append(b, `,"structuredContent":`...), sc...)
	}
	return appendMembers(b, others)
}

// appendContent appends one content block: a plain text block quoted
// here, any other as the SDK writes it.
func appendContent(b []byte, c mcp.Content) ([]byte, error) {
	if t, ok := c.(*mcp.TextContent); ok && t.Meta == nil && t.Annotations == nil {
		n := len(b)
		b = append(b, `{"type":"text","text":`...)
		q, err := jsontext.AppendQuote(b, t.Text)
		if err == nil {
			return append(q, '}'), nil
		}
		b = b[:n] // invalid UTF-8: the SDK replaces it
	}
	data, err := c.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b, data...), nil
}

// appendMembers appends the members of the JSON object obj other than
// content and structuredContent, and closes the object.
func appendMembers(b, obj []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.ReadToken(); err != nil { // {
		return nil, err
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String()
		value, err := dec.ReadValue() // valid until the next read
		if err != nil {
			return nil, err
		}
		if name == "content" || name == "structuredContent" {
			continue
		}
		if b, err = jsontext.AppendQuote(append(b, ','), name); err != nil {
			return nil, err
		}
		b = append(append(b, ':'), value...)
	}
	return append(b, '}'), nil
}
