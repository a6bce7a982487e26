package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/mcpserver"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/workers"
)

// stack is a MIO public listener on a fresh database (ingest, consumers,
// replies, the outbox without dispatch workers, a file blob store) with
// two tenants.
type stack struct {
	env   *dbtest.Env
	owner *pgxpool.Pool
	srv   *httptest.Server
	store blob.Store
	logs  *syncBuffer
	a, b  tenant
}

// tenant is one tenant with a webhook account and tokens per role set.
type tenant struct {
	id      uuid.UUID
	account uuid.UUID
	// telegram is an account of a channel that reacts (nothing is
	// dispatched: there are no workers).
	telegram uuid.UUID
	secret   string
	agent    string // consume, produce, read
	consume  string
	produce  string
	read     string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newStack(t *testing.T, allowedOrigins ...string) *stack {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	st := &stack{env: env, owner: env.OwnerPool(t), logs: &syncBuffer{}}
	mk := func(name string) tenant {
		tn, _, err := svc.TenantCreate(ctx, name)
		require.NoError(t, err)
		secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
		acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "webhook", WebhookSecret: secret,
			Settings: json.RawMessage(`{"endpoint_url":"https://agent.example/mio"}`)})
		require.NoError(t, err)
		tg, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "telegram",
			ExternalID: "bot-" + name, Credentials: json.RawMessage(`{"bot_token":"123456:mcp-test"}`), WebhookSecret: "tg-secret"})
		require.NoError(t, err)
		out := tenant{id: tn.ID, account: acct.ID, telegram: tg.ID, secret: secret}
		for _, r := range []struct {
			to    *string
			roles []db.Role
		}{{&out.agent, []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead}}, {&out.consume, []db.Role{db.RoleConsume}},
			{&out.produce, []db.Role{db.RoleProduce}}, {&out.read, []db.Role{db.RoleRead}}} {
			*r.to, _, err = svc.TokenCreate(ctx, tn.ID, "t", r.roles)
			require.NoError(t, err)
		}
		return out
	}
	st.a, st.b = mk("a"), mk("b")

	st.store, err = blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	registry := builtin.Registry(builtin.Options{})
	hub := notify.New(nil, nil, notify.Options{})
	ing := ingest.New(env.Pool, ingest.Config{OnCommit: hub.Publish})
	ing.Start()
	t.Cleanup(ing.Stop)
	river, err := workers.NewClient(env.Pool, nil, workers.Config{})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(st.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	api := httpapi.New(httpapi.Deps{Pool: env.Pool, Metrics: metrics.New(), Logger: log, Registry: registry,
		Accounts: accounts.NewResolver(env.Pool, accounts.ResolverConfig{Box: box, Registry: registry}), Ingester: ing,
		Outbox: outbox.New(env.Pool, river), Hub: hub, Consumers: consume.New(env.Pool, hub, nil, log, consume.Options{}),
		Blob: st.store, MCPAllowedOrigins: allowedOrigins})
	st.srv = httptest.NewServer(openapitest.Handler(t, openapi.Public, api.PublicHandler()))
	t.Cleanup(st.srv.Close)
	return st
}

// webhook posts a signed Standard Webhooks message.created to tenant
// tn's account and returns nothing: it must be accepted.
func (st *stack) webhook(t *testing.T, tn tenant, conv, text string) {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":%q},"sender":{"id":"u1","display_name":"Ann"},"text":%q}}`,
		time.Now().UTC().Format(time.RFC3339), conv, text))
	id := "msg_" + uuid.NewString()
	now := time.Now()
	sig, err := webhook.Sign(tn.secret, id, now, body)
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodPost, st.srv.URL+"/webhooks/webhook/"+tn.account.String(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// count counts rows of a table in all tenants.
func (st *stack) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, st.owner.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// bearer adds the token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// transports names the two ways an agent reaches the tools.
var transports = []string{"http", "stdio"}

// connect opens an MCP client session with token over transport: "http"
// is Streamable HTTP at /mcp (the in-process backend); "stdio" is the
// server `mio mcp` runs (ClientBackend over the /v1 API), reached over
// an in-memory pipe.
func (st *stack) connect(t *testing.T, transport, token string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	var (
		cs  *mcp.ClientSession
		err error
	)
	switch transport {
	case "http":
		cs, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: st.srv.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}, nil)
	default:
		backend := mcpserver.NewClientBackend(client.New(st.srv.URL, token))
		srv := mcpserver.New(mcpserver.Options{Backend: func(context.Context, *mcp.RequestExtra) (mcpserver.Backend, error) {
			return backend, nil
		}})
		t1, t2 := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, t1, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ss.Close() })
		cs, err = c.Connect(ctx, t2, nil)
		require.NoError(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and returns its structured output (decoded into a
// map) or, for a tool error, its text.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "tools/call %s is a protocol error", name)
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return nil, text.String()
	}
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	// The text block, for clients that do not read structured content,
	// is the same JSON.
	require.Len(t, res.Content, 1, "%s: one text block", name)
	var fromText map[string]any
	require.NoError(t, json.Unmarshal([]byte(text.String()), &fromText), "%s: the text block is JSON", name)
	require.Equal(t, out, fromText, "%s: the text block holds the structured content", name)
	// The server does not validate its outputs (addTool): every output
	// of these tests is held to the schema tools/list advertises.
	require.NoError(t, outputSchema(t, cs, name).Validate(out), "%s: the output does not match its schema: %s", name, b)
	return out, ""
}

// outputSchema is tool name's advertised output schema, resolved.
func outputSchema(t *testing.T, cs *mcp.ClientSession, name string) *jsonschema.Resolved {
	t.Helper()
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tl := range tools.Tools {
		if tl.Name != name {
			continue
		}
		b, err := json.Marshal(tl.OutputSchema)
		require.NoError(t, err)
		var s jsonschema.Schema
		require.NoError(t, json.Unmarshal(b, &s))
		r, err := s.Resolve(nil)
		require.NoError(t, err)
		return r
	}
	t.Fatalf("tools/list has no tool %s", name)
	return nil
}

// ok calls a tool that must succeed.
func ok(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	out, errText := call(t, cs, name, args)
	require.Empty(t, errText, "%s failed", name)
	return out
}

// fails calls a tool that must fail, and returns its error text.
func fails(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	out, errText := call(t, cs, name, args)
	require.NotEmpty(t, errText, "%s succeeded: %v", name, out)
	return errText
}

// deliveries returns a pull's deliveries.
func deliveries(out map[string]any) []map[string]any {
	var ds []map[string]any
	for _, d := range out["deliveries"].([]any) {
		ds = append(ds, d.(map[string]any))
	}
	return ds
}

// pullOne pulls until one delivery arrives.
func pullOne(t *testing.T, cs *mcp.ClientSession, consumer string) map[string]any {
	t.Helper()
	ds := deliveries(ok(t, cs, "pull_messages", map[string]any{"consumer": consumer, "max_messages": 1, "wait": "10s"}))
	require.Len(t, ds, 1)
	return ds[0]
}
