package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// MCPOptions configure the MCP benchmark.
type MCPOptions struct {
	// Messages each drain reads (the HTTP pull API's and the MCP tools',
	// each through a consumer of its own). Default 20,000.
	Messages int
	// Clients pulling at once in each drain. Default 8.
	Clients int
	// Batch per pull (max_messages). Default 100.
	Batch int
	// Replies: pull → reply round trips timed one at a time. Default 200.
	Replies int
	// CPUProfile, when set, is where the server's CPU profile of the MCP
	// drain's first 3 s is written; the server's profile of the HTTP
	// drain's first 3 s goes to CPUProfile+".http", and this process's
	// (the clients') profiles of the drains to CPUProfile+".client" and
	// CPUProfile+".http.client".
	CPUProfile string
}

// MCPResult holds the figures of one run.
type MCPResult struct {
	Clients, Batch, Messages int
	HTTPPerSec, MCPPerSec    float64
	HTTPElapsed, MCPElapsed  time.Duration
	Replies                  int
	RoundTripP50             time.Duration
	RoundTripP99             time.Duration
	httpCPU, mcpCPU          cpuUse // over the drains
	httpRead, mcpRead        int    // messages the drains read
}

// MCP drains the same preloaded messages with pull + ack over the HTTP
// pull API (the Go client, the reference) and over the MCP tools at /mcp
// (pull_messages + ack_messages, the Go MCP SDK's Streamable HTTP
// client), then times pull_messages → reply round trips one at a time.
func MCP(ctx context.Context, env *Env, opts MCPOptions) (*MCPResult, error) {
	if opts.Messages == 0 {
		opts.Messages = 20_000
	}
	if opts.Clients == 0 {
		opts.Clients = 8
	}
	if opts.Batch == 0 {
		opts.Batch = 100
	}
	if opts.Replies == 0 {
		opts.Replies = 200
	}
	cs, err := newConsumerSetup(ctx, env, "bench-mcp")
	if err != nil {
		return nil, err
	}
	defer cs.pool.Close()
	box, _ := secretbox.New(env.MasterKey)
	token, _, err := admin.New(cs.pool, box, env.BaseURL).TokenCreate(ctx, cs.tenant.ID, "mcp", []db.Role{db.RoleConsume, db.RoleProduce})
	if err != nil {
		return nil, err
	}
	if err := preload(ctx, env, cs.tenant.ID, cs.account.ID, opts.Messages+opts.Replies); err != nil {
		return nil, err
	}
	c := client.New(env.BaseURL, token)
	cfg := client.ConsumerConfig{MaxAckPending: 100000}
	for _, name := range []string{"mcp-http", "mcp-tools", "mcp-reply"} {
		if _, err := c.PutConsumer(ctx, name, cfg); err != nil {
			return nil, err
		}
	}
	res := &MCPResult{Clients: opts.Clients, Batch: opts.Batch, Messages: opts.Messages, Replies: opts.Replies}
	sdk := SDKOptions{Messages: opts.Messages, Batch: opts.Batch, Threads: opts.Clients}
	profiled, stopClient, err := opts.profile(ctx, env, ".http")
	if err != nil {
		return nil, err
	}
	cpu0 := env.cpuNow()
	n, elapsed, err := goLoop(ctx, c, "mcp-http", sdk)
	if err != nil {
		return nil, fmt.Errorf("http drain: %w", err)
	}
	res.httpCPU, res.httpRead = cpu0.to(env.cpuNow()), n
	if err := stopClient(); err != nil {
		return nil, err
	}
	if err := profiled(); err != nil {
		return nil, err
	}
	res.HTTPElapsed, res.HTTPPerSec = elapsed, float64(n)/elapsed.Seconds()

	sessions := make([]*mcp.ClientSession, opts.Clients)
	for i := range sessions {
		if sessions[i], err = mcpConnect(ctx, env.BaseURL, token); err != nil {
			return nil, err
		}
		defer sessions[i].Close()
	}
	if profiled, stopClient, err = opts.profile(ctx, env, ""); err != nil {
		return nil, err
	}
	cpu0 = env.cpuNow()
	n, elapsed, err = mcpDrain(ctx, sessions, opts)
	if err != nil {
		return nil, fmt.Errorf("mcp drain: %w", err)
	}
	res.mcpCPU, res.mcpRead = cpu0.to(env.cpuNow()), n
	if err := stopClient(); err != nil {
		return nil, err
	}
	if err := profiled(); err != nil {
		return nil, err
	}
	res.MCPElapsed, res.MCPPerSec = elapsed, float64(n)/elapsed.Seconds()

	var rtts []time.Duration
	for len(rtts) < opts.Replies && ctx.Err() == nil {
		start := time.Now()
		ids, err := mcpPull(ctx, sessions[0], map[string]any{"consumer": "mcp-reply", "max_messages": 1, "wait": "5s"})
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("mcp-reply: no message to answer after %d", len(rtts))
		}
		if _, err := mcpCall(ctx, sessions[0], "reply", map[string]any{"consumer": "mcp-reply",
			"delivery_id": ids[0], "text": "answer"}); err != nil {
			return nil, err
		}
		rtts = append(rtts, time.Since(start))
	}
	SortDurations(rtts)
	res.RoundTripP50, res.RoundTripP99 = Percentile(rtts, 50), Percentile(rtts, 99)
	return res, nil
}

// profile starts the profiles of one drain (suffix names its files): the
// server's first 3 s and this process's until stopClient.
func (o MCPOptions) profile(ctx context.Context, env *Env, suffix string) (server, stopClient func() error, err error) {
	if o.CPUProfile == "" {
		none := func() error { return nil }
		return none, none, nil
	}
	if stopClient, err = startCPUProfile(o.CPUProfile + suffix + ".client"); err != nil {
		return nil, nil, err
	}
	return env.profileAfter(ctx, 0, 3*time.Second, o.CPUProfile+suffix), stopClient, nil
}

// mcpDrain reads opts.Messages with one goroutine per session:
// pull_messages, then ack_messages of the batch.
func mcpDrain(ctx context.Context, sessions []*mcp.ClientSession, opts MCPOptions) (int, time.Duration, error) {
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		errs  atomic.Value
	)
	start := time.Now()
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for total.Load() < int64(opts.Messages) && ctx.Err() == nil {
				ids, err := mcpPull(ctx, s, map[string]any{"consumer": "mcp-tools", "max_messages": opts.Batch, "wait": "0s"})
				if err != nil {
					errs.Store(err)
					return
				}
				if len(ids) == 0 {
					continue // the others hold the rest
				}
				if _, err := mcpCall(ctx, s, "ack_messages", map[string]any{"consumer": "mcp-tools", "delivery_ids": ids}); err != nil {
					errs.Store(err)
					return
				}
				total.Add(int64(len(ids)))
			}
		}()
	}
	wg.Wait()
	if err, _ := errs.Load().(error); err != nil {
		return 0, 0, err
	}
	return int(total.Load()), time.Since(start), nil
}

type mcpBearer struct {
	token string
	base  http.RoundTripper
}

func (b mcpBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func mcpConnect(ctx context.Context, baseURL, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "mio-bench", Version: "v0"}, nil)
	hc := &http.Client{Transport: mcpBearer{token, http.DefaultTransport}}
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: baseURL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
}

// mcpCall calls a tool and returns its structured output as the SDK's
// client decoded it (maps); a tool error is an error.
func mcpCall(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any) (any, error) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
		return nil, fmt.Errorf("%s: %s", name, b.String())
	}
	return res.StructuredContent, nil
}

// mcpPull calls pull_messages and returns the delivery ids. They are read
// from the decoded structured output as it is: encoding it again to
// decode it into a struct would be the benchmark's own cost (a fifth of
// its CPU in the drain, pprof), which no agent has to pay.
func mcpPull(ctx context.Context, s *mcp.ClientSession, args map[string]any) ([]string, error) {
	out, err := mcpCall(ctx, s, "pull_messages", args)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	ds, ok := m["deliveries"].([]any)
	if !ok {
		return nil, fmt.Errorf("pull_messages: no deliveries in %v", out)
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		dm, _ := d.(map[string]any)
		if ids[i], ok = dm["delivery_id"].(string); !ok {
			return nil, fmt.Errorf("pull_messages: a delivery without delivery_id: %v", d)
		}
	}
	return ids, nil
}

// Print writes the report.
func (r *MCPResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench mcp — pull batch %d + ack, %d clients, %d messages per drain\n", r.Batch, r.Clients, r.Messages)
	fmt.Fprintf(w, "  HTTP pull API (Go client, reference) %10.0f msg/s   (%s)\n", r.HTTPPerSec, r.HTTPElapsed.Round(time.Millisecond))
	printCPU(w, "msg", r.httpCPU, int64(r.httpRead))
	fmt.Fprintf(w, "  MCP tools over /mcp                  %10.0f msg/s   (%s)", r.MCPPerSec, r.MCPElapsed.Round(time.Millisecond))
	if r.HTTPPerSec > 0 {
		fmt.Fprintf(w, "; %.2f x HTTP", r.MCPPerSec/r.HTTPPerSec)
	}
	fmt.Fprintln(w)
	printCPU(w, "msg", r.mcpCPU, int64(r.mcpRead))
	fmt.Fprintf(w, "pull_messages → reply round trip, one at a time, %d answers: p50 %s, p99 %s\n", r.Replies,
		r.RoundTripP50.Round(10*time.Microsecond), r.RoundTripP99.Round(10*time.Microsecond))
}
