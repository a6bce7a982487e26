package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewHTTPHandler returns New's server behind the SDK's Streamable HTTP
// handler, stateless and answering JSON (sopts.Stateless and
// sopts.JSONResponse are set), with a direct path for tools/call.
//
// The SDK writes a tool's answer through its JSON-RPC layer, which
// validates and compacts the already encoded result twice (as a
// Marshaler's output, then as the response's raw result): for a pull of
// 100 messages that was half of the server's CPU (`mio-bench mcp`,
// pprof). The direct path serves a POST holding one tools/call of a tool
// of this package — the request the SDK would accept, checked as it
// checks it — by calling the tool's handler and writing the JSON-RPC
// envelope around wireResult's bytes. Everything else (initialize,
// server/discover, tools/list, resources, batches, notifications, GET,
// DELETE, unknown tools, any request the SDK would refuse or that carries
// what the direct path does not handle) goes to the SDK handler
// untouched. The answers are the SDK's byte for byte
// (TestDirectMatchesSDK). Two differences a tool can see: it gets no
// session (a stateless request has none the client could be reached
// through anyway), and receiving middleware other than encodeResults is
// not run for it.
//
// The direct path is off, and everything is the SDK's, when the options
// ask for what it does not do: the localhost rule or an event store. It
// makes no cross-origin check: the caller wraps the handler (httpapi
// refuses origins not listed before any of this runs).
func NewHTTPHandler(opts Options, sopts mcp.StreamableHTTPOptions) http.Handler {
	srv, tools, impl := build(opts)
	sopts.Stateless, sopts.JSONResponse = true, true
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &sopts)
	if !sopts.DisableLocalhostProtection || sopts.EventStore != nil {
		return sdk
	}
	// The SDK refuses bodies above its limit (413); without one (below 0)
	// it reads any, and the direct path leaves those above the default to
	// it rather than allocate what a Content-Length claims.
	limit := sopts.MaxRequestBodyBytes
	if limit <= 0 {
		limit = mcp.DefaultMaxRequestBodyBytes
	}
	return &direct{sdk: sdk, tools: tools.handlers, limit: limit, impl: impl}
}

// direct is the Streamable HTTP handler with the direct tools/call path.
type direct struct {
	sdk   http.Handler
	tools map[string]mcp.ToolHandler
	limit int64 // the largest body it serves
	impl  *mcp.Implementation
}

// protocolVersions are the versions the direct path serves: those the SDK
// negotiates (TestDirectVersionsAreSDKs). From versionSessionless on, a
// request carries its version, client info and capabilities in _meta,
// and its method and tool name in headers as well.
var protocolVersions = []string{versionSessionless, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

const versionSessionless = "2026-07-28"

const (
	headerVersion = "Mcp-Protocol-Version"
	headerMethod  = "Mcp-Method"
	headerName    = "Mcp-Name"
)

func (d *direct) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !d.serve(w, r) {
		d.sdk.ServeHTTP(w, r)
	}
}

// serve answers r if it is a tools/call the direct path serves and
// reports whether it did; when it did not, r is as it came (its body
// restored) and nothing was written.
func (d *direct) serve(w http.ResponseWriter, r *http.Request) bool {
	version := r.Header.Get(headerVersion)
	if r.Method != http.MethodPost || len(r.Header.Values("Last-Event-ID")) > 0 ||
		version != "" && !slices.Contains(protocolVersions, version) ||
		baseMediaType(r.Header.Get("Content-Type")) != "application/json" || !acceptsBoth(r.Header.Values("Accept")) ||
		r.ContentLength <= 0 || r.ContentLength > d.limit {
		return false
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		// As the SDK answers a body it cannot read.
		http.Error(w, "failed to read body: "+err.Error(), http.StatusBadRequest)
		return true
	}
	call, params, ok := d.parse(r.Header, version, body)
	if !ok {
		r.Body = io.NopCloser(bytes.NewReader(body))
		return false
	}
	sessionless := version >= versionSessionless
	req := &mcp.CallToolRequest{Params: params,
		Extra: &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}}
	res, err := d.tools[params.Name](r.Context(), req)
	if err == nil && res == nil {
		err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: params.Name + " returned no result"}
	}
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		writeError(w, call.ID, err, sessionless)
		return true
	}
	data, err := d.encode(call.ID, res, sessionless)
	if err != nil {
		writeError(w, call.ID, err, sessionless)
		return true
	}
	_, _ = w.Write(data)
	return true
}

// parse returns the tools/call body holds if the direct path serves it:
// one call (not a batch, not a notification) of a tool of this package,
// with its arguments an object, and what the SDK checks of a call of its
// protocol version in order.
func (d *direct) parse(h http.Header, version string, body []byte) (*jsonrpc.Request, *mcp.CallToolParamsRaw, bool) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return nil, nil, false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil, nil, false
	}
	call, ok := msg.(*jsonrpc.Request)
	if !ok || call.Method != "tools/call" || !call.IsCall() || !isObject(call.Params) {
		return nil, nil, false
	}
	// The SDK matches member names exactly (encoding/json would take
	// "Name" for "name"); encoding/json/v2 does too, and refuses what the
	// SDK might read otherwise (duplicate names, invalid UTF-8).
	var p mcp.CallToolParamsRaw
	if err := jsonv2.Unmarshal(call.Params, &p); err != nil || p.InputResponses != nil || p.RequestState != "" ||
		len(p.Arguments) > 0 && !isObject(p.Arguments) {
		return nil, nil, false
	}
	if _, ok := d.tools[p.Name]; !ok {
		return nil, nil, false
	}
	metaVersion, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	if version >= versionSessionless || metaVersion != "" {
		if version == "" || metaVersion != version {
			return nil, nil, false
		}
	}
	if version >= versionSessionless && (h.Get(headerMethod) != call.Method || h.Get(headerName) != p.Name || !validMeta(p.Meta)) {
		return nil, nil, false
	}
	return call, &p, true
}

// validMeta reports whether a sessionless call's _meta holds what the SDK
// requires: client capabilities, and client info if any, each of its type.
func validMeta(m mcp.Meta) bool {
	if info, ok := m[mcp.MetaKeyClientInfo]; ok && !remarshals(info, &mcp.Implementation{}) {
		return false
	}
	var caps struct {
		mcp.ClientCapabilities
		Roots *struct {
			ListChanged bool `json:"listChanged,omitempty"`
		} `json:"roots,omitempty"`
	}
	return remarshals(m[mcp.MetaKeyClientCapabilities], &caps)
}

func remarshals(v, into any) bool {
	if v == nil {
		return false
	}
	b, err := json.Marshal(v)
	return err == nil && jsonv2.Unmarshal(b, into) == nil
}

// encode writes the JSON-RPC response of a tool's result: the envelope as
// the SDK encodes it, around the result as wireResult writes it with what
// the SDK adds to it (an empty content list for none; on a sessionless
// call the server's info in _meta and the result type).
func (d *direct) encode(id jsonrpc.ID, res *mcp.CallToolResult, sessionless bool) ([]byte, error) {
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	if sessionless {
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
			res.Meta[mcp.MetaKeyServerInfo] = d.impl
		}
	}
	result, err := wireResult{res}.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(result)+96)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if b, err = appendID(b, id); err != nil {
		return nil, err
	}
	b = append(append(b, `,"result":`...), result...)
	if sessionless {
		b = append(b[:len(b)-1], `,"resultType":"complete"}`...)
	}
	return append(b, '}'), nil
}

// appendID appends a request id as the SDK's envelope has it: an
// integer, or a string encoded by encoding/json without HTML escaping.
func appendID(b []byte, id jsonrpc.ID) ([]byte, error) {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case string:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return append(b, bytes.TrimRight(buf.Bytes(), "\n")...), nil
	}
	return nil, fmt.Errorf("request id %v: want an integer or a string", id.Raw())
}

// writeError writes a JSON-RPC error response as the SDK does: a
// method-not-found error (by its code) reported as the method's, status
// 200, except that a sessionless call's method-not-found is 404 and its
// invalid params, unsupported version and missing capabilities are 400.
func writeError(w http.ResponseWriter, id jsonrpc.ID, err error, sessionless bool) {
	if notFound := (&jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}); errors.Is(err, notFound) {
		err = fmt.Errorf("%w: %q", notFound, "tools/call")
	}
	data, merr := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: err})
	if merr != nil {
		http.Error(w, merr.Error(), http.StatusInternalServerError)
		return
	}
	var jerr *jsonrpc.Error
	if sessionless && errors.As(err, &jerr) {
		switch jerr.Code {
		case jsonrpc.CodeMethodNotFound:
			w.WriteHeader(http.StatusNotFound)
		case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
			w.WriteHeader(http.StatusBadRequest)
		}
	}
	_, _ = w.Write(data)
}

func isObject(raw json.RawMessage) bool {
	b := bytes.TrimLeft(raw, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

func baseMediaType(value string) string {
	mt, _, err := mime.ParseMediaType(value)
	if err != nil {
		return ""
	}
	return mt
}

// acceptsBoth reports whether Accept takes both JSON and an event stream,
// as the SDK requires of a POST.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for _, raw := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}
