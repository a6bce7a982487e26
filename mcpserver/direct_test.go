package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/mcpserver"
)

// directPair serves one server twice: through NewHTTPHandler's direct
// path (counting the requests it answered) and through the SDK's handler
// alone. The tools run over ClientBackend on the stack, under tenant a's
// agent token.
type directPair struct {
	sdk, direct *httptest.Server
	served      *atomic.Int64
}

func newDirectPair(t *testing.T, st *stack) directPair {
	t.Helper()
	backend := mcpserver.NewClientBackend(client.New(st.srv.URL, st.a.agent))
	h := mcpserver.NewHTTPHandler(mcpserver.Options{Backend: func(context.Context, *mcp.RequestExtra) (mcpserver.Backend, error) {
		return backend, nil
	}}, mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	p := directPair{served: &atomic.Int64{}}
	sdk, direct := mcpserver.SplitHTTPHandler(h, p.served)
	p.sdk, p.direct = httptest.NewServer(sdk), httptest.NewServer(direct)
	t.Cleanup(p.sdk.Close)
	t.Cleanup(p.direct.Close)
	return p
}

// answer is what a client sees of a response.
type answer struct {
	Status                    int
	ContentType, CacheControl string
	Body                      string
}

func post(t *testing.T, url, method string, header map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), string(b)}
}

// protocol is how a client speaks one protocol version: the headers of a
// tools/call and the _meta it carries.
type protocol struct {
	name   string
	header func(tool string) map[string]string
	meta   map[string]any
}

var protocols = []protocol{
	{"2026-07-28", func(tool string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
	}, map[string]any{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientInfo:         map[string]any{"name": "raw", "version": "v0"},
		mcp.MetaKeyClientCapabilities: map[string]any{"roots": map[string]any{"listChanged": true}},
		"traceparent":                 "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}},
	{"2025-06-18", func(string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2025-06-18"}
	}, nil},
	{"no version header", func(string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Accept": "*/*"}
	}, nil},
}

func callBody(id any, tool string, args any, meta map[string]any) string {
	params := map[string]any{"name": tool}
	if args != nil {
		params["arguments"] = args
	}
	if meta != nil {
		params["_meta"] = meta
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	return string(b)
}

// volatile are the members two pulls of the same message differ in;
// leaseTime, the one two calls of extend_lease differ in.
var (
	volatile  = regexp.MustCompile(`(\\?"(?:delivery_id|lease_expires_at)\\?":\\?")[^"\\]*`)
	leaseTime = regexp.MustCompile(`(\\?"lease_expires_at\\?":\\?")[^"\\]*`)
)

// TestDirectMatchesSDK: /mcp's direct tools/call path answers as the
// SDK's handler alone does — status, Content-Type, Cache-Control and body
// byte for byte — for every tool, its results and its errors, under each
// protocol version, over the raw protocol and the SDK's client; and every
// request it does not serve (protocol errors, batches, notifications,
// unknown tools, other methods) reaches the SDK's handler as it came.
func TestDirectMatchesSDK(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	ctx := context.Background()
	c := client.New(st.srv.URL, st.a.agent)
	for _, name := range []string{"eq-sdk", "eq-direct"} {
		_, err := c.PutConsumer(ctx, name, client.ConsumerConfig{DeliverPolicy: "all"})
		require.NoError(t, err)
	}
	st.webhook(t, st.a, "conv-eq", `hello <b>"eq"</b> & é`)
	p := newDirectPair(t, st)
	sess := protocols[0]

	// The same message pulled through each: equal but for the delivery.
	var (
		pulled  []map[string]any
		answers []answer
	)
	for _, pull := range []struct {
		url, consumer string
	}{{p.sdk.URL, "eq-sdk"}, {p.direct.URL, "eq-direct"}} {
		a := post(t, pull.url, http.MethodPost, sess.header("pull_messages"),
			callBody(1, "pull_messages", map[string]any{"consumer": pull.consumer, "max_messages": 1, "wait": "5s"}, sess.meta))
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		var resp struct {
			Result struct {
				StructuredContent struct {
					Deliveries []map[string]any `json:"deliveries"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.Body), &resp), a.Body)
		require.Len(t, resp.Result.StructuredContent.Deliveries, 1, a.Body)
		pulled = append(pulled, resp.Result.StructuredContent.Deliveries[0])
		a.Body = volatile.ReplaceAllString(a.Body, "${1}x")
		answers = append(answers, a)
	}
	require.Equal(t, answers[0], answers[1], "SDK (expected) vs direct (actual)")
	require.Equal(t, int64(1), p.served.Load(), "the direct path served the second pull")
	msg := pulled[0]["message"].(map[string]any)
	account, msgID := msg["account_id"], msg["id"]
	dSDK, dDirect := pulled[0]["delivery_id"], pulled[1]["delivery_id"]
	sent := ok(t, st.connect(t, "http", st.a.agent), "send_message",
		map[string]any{"account_id": account, "conversation_id": "conv-eq", "text": "before"})

	// same sends a request to the SDK's handler twice (so that a call
	// changing state answers as it answers from then on) and to the direct
	// path once, and compares the last two answers.
	same := func(t *testing.T, served bool, method string, header map[string]string, body string) {
		t.Helper()
		post(t, p.sdk.URL, method, header, body)
		want := post(t, p.sdk.URL, method, header, body)
		before := p.served.Load()
		got := post(t, p.direct.URL, method, header, body)
		want.Body, got.Body = leaseTime.ReplaceAllString(want.Body, "${1}x"), leaseTime.ReplaceAllString(got.Body, "${1}x")
		require.Equal(t, want, got, "SDK (expected) vs direct (actual)")
		require.Equal(t, served, p.served.Load() == before+1, "served by the direct path")
	}

	calls := []struct {
		tool string
		args any
	}{
		{"pull_messages", map[string]any{"consumer": "eq-sdk", "wait": "0s"}},
		{"pull_messages", map[string]any{"max_messages": 1000}},
		{"pull_messages", map[string]any{"max_messages": "ten"}},
		{"pull_messages", map[string]any{"wait": "0s", "unknown": true}},
		{"get_message", nil},
		{"ack_messages", map[string]any{"consumer": "eq-sdk", "delivery_ids": []any{dSDK, "not-a-uuid"}}},
		{"ack_messages", map[string]any{"consumer": "eq-direct", "delivery_ids": []any{}}},
		{"release_messages", map[string]any{"consumer": "eq-direct", "delivery_ids": []any{dDirect}, "delay": "1s"}},
		{"extend_lease", map[string]any{"consumer": "eq-direct", "delivery_ids": []any{dDirect}}},
		{"reply", map[string]any{"consumer": "eq-sdk", "delivery_id": dSDK, "text": "answer <&>"}},
		{"reply", map[string]any{"consumer": "eq-sdk", "delivery_id": uuid.NewString(), "text": "lost"}},
		{"send_message", map[string]any{"account_id": account, "conversation_id": "conv-eq", "text": "hi", "idempotency_key": "eq-send"}},
		{"send_message", map[string]any{"account_id": "x", "conversation_id": "conv-eq", "text": "hi"}},
		{"stream_start", map[string]any{"account_id": account, "conversation_id": "conv-eq", "idempotency_key": "eq-stream"}},
		{"stream_append", map[string]any{"outbound_id": uuid.NewString(), "seq": 1, "text": "x"}},
		{"stream_finish", map[string]any{"outbound_id": uuid.NewString()}},
		{"get_send_status", map[string]any{"id": sent["outbound_id"]}},
		{"show_typing", map[string]any{"account_id": account, "conversation_id": "conv-eq"}},
		{"get_message", map[string]any{"id": msgID}},
		{"get_message", map[string]any{"id": "nope"}},
		{"conversation_history", map[string]any{"account_id": account, "conversation_id": "conv-eq", "limit": 5}},
	}
	for _, pr := range protocols {
		for i, call := range calls {
			t.Run(fmt.Sprintf("%s/%s/%d", pr.name, call.tool, i), func(t *testing.T) {
				same(t, true, http.MethodPost, pr.header(call.tool), callBody(100+i, call.tool, call.args, pr.meta))
			})
		}
	}

	// Requests the direct path serves with ids and bodies of every form.
	old := protocols[1].header("get_message")
	args := map[string]any{"id": msgID}
	for name, body := range map[string]string{
		"string id":       callBody("a<b>\"c\"é\u2028\x01", "get_message", args, nil),
		"fractional id":   `{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":{"name":"get_message","arguments":{"id":"` + msgID.(string) + `"}}}`,
		"spaces":          " \n{ \"jsonrpc\" : \"2.0\", \"id\" : 8, \"method\" : \"tools/call\", \"params\" : { \"name\" : \"get_message\" , \"arguments\" : { \"id\" : \"" + msgID.(string) + "\" } } }\n",
		"old meta":        callBody(9, "get_message", args, map[string]any{mcp.MetaKeyProtocolVersion: "2025-06-18", "progressToken": 3}),
		"no meta version": callBody(10, "get_message", args, map[string]any{"k": []any{1, "x"}}),
		"member cased":    `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"get_message","Arguments":{"id":"` + msgID.(string) + `"}}}`,
	} {
		t.Run("served/"+name, func(t *testing.T) { same(t, true, http.MethodPost, old, body) })
	}

	// Requests the SDK's handler answers.
	withHeader := func(h map[string]string, k, v string) map[string]string {
		out := map[string]string{}
		for hk, hv := range h {
			out[hk] = hv
		}
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	metaWith := func(k string, v any) map[string]any {
		out := map[string]any{}
		for mk, mv := range sess.meta {
			out[mk] = mv
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	sessHeader := sess.header("get_message")
	for name, meta := range map[string]map[string]any{
		"member cased":       metaWith(mcp.MetaKeyClientInfo, map[string]any{"Name": 5, "name": "raw", "version": "v0"}),
		"no client info":     metaWith(mcp.MetaKeyClientInfo, nil),
		"capabilities cased": metaWith(mcp.MetaKeyClientCapabilities, map[string]any{"Roots": "x", "roots": map[string]any{}}),
	} {
		t.Run("served/sessionless "+name, func(t *testing.T) {
			same(t, true, http.MethodPost, sessHeader, callBody(12, "get_message", args, meta))
		})
	}
	for name, c := range map[string]struct {
		method string
		header map[string]string
		body   string
	}{
		"body over the limit":       {http.MethodPost, old, callBody(17, "get_message", map[string]any{"id": strings.Repeat("x", mcp.DefaultMaxRequestBodyBytes)}, nil)},
		"name cased":                {http.MethodPost, old, `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"Name":"get_message","arguments":{}}}`},
		"duplicate name":            {http.MethodPost, old, `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"nope","name":"get_message","arguments":{}}}`},
		"unknown tool":              {http.MethodPost, sess.header("nope"), callBody(20, "nope", args, sess.meta)},
		"Mcp-Name differs":          {http.MethodPost, sess.header("get_send_status"), callBody(21, "get_message", args, sess.meta)},
		"no Mcp-Method":             {http.MethodPost, withHeader(sessHeader, "Mcp-Method", ""), callBody(22, "get_message", args, sess.meta)},
		"Mcp-Method differs":        {http.MethodPost, withHeader(sessHeader, "Mcp-Method", "tools/list"), callBody(23, "get_message", args, sess.meta)},
		"meta version differs":      {http.MethodPost, sessHeader, callBody(24, "get_message", args, metaWith(mcp.MetaKeyProtocolVersion, "2025-11-25"))},
		"no meta version":           {http.MethodPost, sessHeader, callBody(25, "get_message", args, metaWith(mcp.MetaKeyProtocolVersion, nil))},
		"no capabilities":           {http.MethodPost, sessHeader, callBody(26, "get_message", args, metaWith(mcp.MetaKeyClientCapabilities, nil))},
		"capabilities not object":   {http.MethodPost, sessHeader, callBody(27, "get_message", args, metaWith(mcp.MetaKeyClientCapabilities, 3))},
		"client info not object":    {http.MethodPost, sessHeader, callBody(28, "get_message", args, metaWith(mcp.MetaKeyClientInfo, "me"))},
		"client info null":          {http.MethodPost, sessHeader, callBody(29, "get_message", args, metaWith(mcp.MetaKeyClientInfo, json.RawMessage("null")))},
		"meta version, old header":  {http.MethodPost, old, callBody(30, "get_message", args, sess.meta)},
		"meta version, no header":   {http.MethodPost, withHeader(old, "Mcp-Protocol-Version", ""), callBody(31, "get_message", args, sess.meta)},
		"unsupported version":       {http.MethodPost, withHeader(old, "Mcp-Protocol-Version", "2099-01-01"), callBody(32, "get_message", args, nil)},
		"arguments null":            {http.MethodPost, old, `{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"get_message","arguments":null}}`},
		"arguments array":           {http.MethodPost, old, `{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"get_message","arguments":[1]}}`},
		"no params":                 {http.MethodPost, old, `{"jsonrpc":"2.0","id":35,"method":"tools/call"}`},
		"params null":               {http.MethodPost, old, `{"jsonrpc":"2.0","id":36,"method":"tools/call","params":null}`},
		"input responses":           {http.MethodPost, old, `{"jsonrpc":"2.0","id":37,"method":"tools/call","params":{"name":"get_message","arguments":{},"inputResponses":{"a":{}}}}`},
		"batch":                     {http.MethodPost, withHeader(old, "Mcp-Protocol-Version", ""), "[" + callBody(38, "get_message", args, nil) + "]"},
		"notification":              {http.MethodPost, old, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_message","arguments":{}}}`},
		"null id":                   {http.MethodPost, old, `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"get_message","arguments":{}}}`},
		"bad version tag":           {http.MethodPost, old, `{"jsonrpc":"1.0","id":39,"method":"tools/call","params":{"name":"get_message","arguments":{}}}`},
		"invalid JSON":              {http.MethodPost, old, `{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"get_message"`},
		"empty body":                {http.MethodPost, old, ``},
		"tools/list":                {http.MethodPost, old, `{"jsonrpc":"2.0","id":41,"method":"tools/list"}`},
		"ping":                      {http.MethodPost, old, `{"jsonrpc":"2.0","id":42,"method":"ping"}`},
		"discover":                  {http.MethodPost, withHeader(withHeader(sessHeader, "Mcp-Method", "server/discover"), "Mcp-Name", ""), `{"jsonrpc":"2.0","id":43,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		"Accept JSON only":          {http.MethodPost, withHeader(old, "Accept", "application/json"), callBody(44, "get_message", args, nil)},
		"Content-Type text":         {http.MethodPost, withHeader(old, "Content-Type", "text/plain"), callBody(45, "get_message", args, nil)},
		"Last-Event-ID":             {http.MethodPost, withHeader(old, "Last-Event-ID", "x_1"), callBody(46, "get_message", args, nil)},
		"GET":                       {http.MethodGet, old, ``},
		"DELETE":                    {http.MethodDelete, withHeader(old, "Mcp-Session-Id", "s"), ``},
		"initialize":                {http.MethodPost, withHeader(old, "Mcp-Protocol-Version", ""), `{"jsonrpc":"2.0","id":47,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`},
		"notifications/initialized": {http.MethodPost, old, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	} {
		t.Run("sdk/"+name, func(t *testing.T) { same(t, false, c.method, c.header, c.body) })
	}

	// The SDK's client decodes the same results from both, and its calls
	// take the direct path.
	t.Run("sdk client", func(t *testing.T) {
		connect := func(url string) *mcp.ClientSession {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			return cs
		}
		fromSDK, fromDirect := connect(p.sdk.URL), connect(p.direct.URL)
		for i, call := range calls {
			params := &mcp.CallToolParams{Name: call.tool, Arguments: call.args}
			_, err := fromSDK.CallTool(ctx, params)
			require.NoError(t, err)
			want, err := fromSDK.CallTool(ctx, params)
			require.NoError(t, err)
			before := p.served.Load()
			got, err := fromDirect.CallTool(ctx, params)
			require.NoError(t, err)
			if call.tool == "extend_lease" {
				w, g := want.StructuredContent.(map[string]any), got.StructuredContent.(map[string]any)
				require.WithinDuration(t, mustTime(t, w["lease_expires_at"]), mustTime(t, g["lease_expires_at"]), 5*time.Second)
				delete(w, "lease_expires_at")
				delete(g, "lease_expires_at")
				want.Content, got.Content = nil, nil
			}
			require.Equal(t, want, got, "%d: %s", i, call.tool)
			require.Equal(t, before+1, p.served.Load(), "%d: %s took the direct path", i, call.tool)
		}
	})
}

func mustTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return at
}

// TestDirectVersionsAreSDKs: every protocol version the direct path
// serves is one the SDK negotiates.
func TestDirectVersionsAreSDKs(t *testing.T) {
	t.Parallel()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpserver.New(mcpserver.Options{}) },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	srv := httptest.NewServer(h)
	defer srv.Close()
	a := post(t, srv.URL, http.MethodPost, map[string]string{"Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"},
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	var resp struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.Body), &resp))
	require.Subset(t, resp.Result.SupportedVersions, mcpserver.ProtocolVersions)
}
