package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestDirectErrorsMatchSDK: a tool failing with a JSON-RPC error, or
// answering with _meta of its own, is answered by the direct path as the
// SDK's handler answers it (status included: the sessionless protocol
// maps some codes to 404 and 400).
func TestDirectErrorsMatchSDK(t *testing.T) {
	t.Parallel()
	srv, tools, impl := build(Options{})
	type in struct {
		Code int64 `json:"code"`
	}
	addTool(tools, &mcp.Tool{Name: "fail", InputSchema: schemaFor[in]()},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, idIn, error) {
			switch a.Code {
			case 0:
				return &mcp.CallToolResult{Meta: mcp.Meta{"mine": "x"}, IsError: true}, idIn{ID: "<&>"}, nil
			case 1:
				return nil, idIn{}, errors.New("plain")
			}
			return nil, idIn{}, &jsonrpc.Error{Code: a.Code, Message: "failed", Data: json.RawMessage(`{"a":1}`)}
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
	d := &direct{sdk: sdk, tools: tools.handlers, limit: mcp.DefaultMaxRequestBodyBytes, impl: impl}
	served := 0
	direct := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.serve(w, r) {
			served++
			return
		}
		sdk.ServeHTTP(w, r)
	})
	do := func(h http.Handler, version string, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			r.Header.Set("Mcp-Protocol-Version", version)
		}
		if version >= versionSessionless {
			r.Header.Set("Mcp-Method", "tools/call")
			r.Header.Set("Mcp-Name", "fail")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, version := range []string{versionSessionless, "2025-11-25", ""} {
		meta := ""
		if version >= versionSessionless {
			meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{}}`
		}
		for _, code := range []int64{0, 1, jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams, jsonrpc.CodeInternalError,
			mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities, mcp.CodeHeaderMismatch, -1} {
			body := `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"fail","arguments":{"code":` +
				strings.TrimSpace(string(mustJSON(t, code))) + `}` + meta + `}}`
			want, before := do(sdk, version, body), served
			got := do(direct, version, body)
			require.Equal(t, before+1, served, "%s %d: served by the direct path", version, code)
			require.Equal(t, want.Code, got.Code, "%s %d: status", version, code)
			require.Equal(t, want.Header(), got.Header(), "%s %d: headers", version, code)
			wb, _ := io.ReadAll(want.Body)
			gb, _ := io.ReadAll(got.Body)
			require.Equal(t, string(wb), string(gb), "%s %d: SDK (expected) vs direct (actual)", version, code)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
