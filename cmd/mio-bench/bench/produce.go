package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// ProduceOptions configure the produce benchmark.
type ProduceOptions struct {
	Clients  int           // concurrent POST /v1/outbound clients; default 32
	Duration time.Duration // measured time per phase; default 10s
	Warmup   time.Duration // unmeasured load first; default 2s
	// BatchClients post POST /v1/outbound/batch concurrently, BatchSize
	// commands each. Defaults 4 and 500.
	BatchClients int
	BatchSize    int
	// SkipPgbench skips the reference run.
	SkipPgbench bool
	// Loader is the load generator, LoaderRaw (default) or LoaderGo.
	Loader string
	// CPUProfile, when set, is where the server's CPU profile of the
	// single-send phase is written.
	CPUProfile string
}

// ProduceResult holds the figures of one run.
type ProduceResult struct {
	Clients        int
	Loader         string
	Accepted       int64
	Failed         int64
	PerSec         float64
	P50, P99, Max  time.Duration
	BatchClients   int
	BatchSize      int
	BatchAccepted  int64
	BatchFailed    int64
	BatchPerSec    float64
	BatchP50       time.Duration
	BatchP99       time.Duration
	ReferenceTPS   float64
	ReferenceShape string
	// cpu, batchCPU and refCPU are where the machine's CPU went in the
	// single-send, batch and reference phases; refTx is the reference's
	// transactions.
	cpu, batchCPU, refCPU cpuUse
	refTx                 int64
	group0, group1        groupSnap
}

// Produce measures the agents' send path on a server that only accepts
// (role api: no dispatch competes for the machine; the jobs wait in the
// queue). Phase 1: Clients clients POST /v1/outbound, a unique
// idempotency key each, text of a typical reply; accepted/s and latency.
// Phase 2: BatchClients clients POST /v1/outbound/batch with BatchSize
// commands each; sends accepted/s. Reference, same database and client
// count: pgbench committing the transaction shape of one send — an outbox
// row with its unique idempotency key, and its event row — one commit per
// send.
func Produce(ctx context.Context, env *Env, opts ProduceOptions) (*ProduceResult, error) {
	if opts.Clients == 0 {
		opts.Clients = 32
	}
	if opts.Duration == 0 {
		opts.Duration = 10 * time.Second
	}
	if opts.Warmup == 0 {
		opts.Warmup = 2 * time.Second
	}
	if opts.BatchClients == 0 {
		opts.BatchClients = 4
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = 500
	}
	var err error
	if opts.Loader, err = checkLoader(opts.Loader); err != nil {
		return nil, err
	}
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 2, RuntimeRole: "mio_runtime"})
	if err != nil {
		return nil, err
	}
	box, _ := secretbox.New(env.MasterKey)
	svc := admin.New(pool, box, env.BaseURL)
	tenant, _, err := svc.TenantCreate(ctx, tenantName("bench-produce"))
	if err != nil {
		pool.Close()
		return nil, err
	}
	settings, _ := json.Marshal(map[string]string{"endpoint_url": "http://127.0.0.1:9/unused"})
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook",
		WebhookSecret: "whsec_YmVuY2gtcHJvZHVjZS1zZWNyZXQtMzItYnl0ZXMh", Settings: settings})
	if err != nil {
		pool.Close()
		return nil, err
	}
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "bench-produce", []db.Role{db.RoleProduce})
	pool.Close()
	if err != nil {
		return nil, err
	}
	const text = "Thanks for reaching out! Here is what I found about your question, with the steps to follow."
	res := &ProduceResult{Clients: opts.Clients, BatchClients: opts.BatchClients, BatchSize: opts.BatchSize, Loader: opts.Loader}

	var seq atomic.Int64
	command := func(buf []byte, run string) []byte {
		n := seq.Add(1)
		return fmt.Appendf(buf, `{"idempotency_key":"%s-%d","account_id":"%s","conversation_id":"C%d","text":%q}`, run, n, acct.ID, n%1000, text)
	}
	single := func() []byte { return command(nil, "s") }
	profiled := env.profileAfter(ctx, opts.Warmup, opts.Duration, opts.CPUProfile)
	p := runLoad(ctx, env, opts.Loader, "outbound", opts.Clients, opts.Warmup, opts.Duration, bearerPost(env.BaseURL+"/v1/outbound", token, single),
		func(status int) bool { return status == http.StatusAccepted })
	res.Accepted, res.Failed, res.PerSec, res.P50, res.P99, res.Max, res.cpu = p.ok, p.failed, p.perSec, p.p50, p.p99, p.max, p.cpu
	res.group0, res.group1 = p.group0, p.group1
	if err := profiled(); err != nil {
		return res, err
	}

	batch := func() []byte {
		b := []byte(`{"commands":[`)
		for i := range opts.BatchSize {
			if i > 0 {
				b = append(b, ',')
			}
			b = command(b, "b")
		}
		return append(b, "]}"...)
	}
	p = runLoad(ctx, env, opts.Loader, "", opts.BatchClients, opts.Warmup, opts.Duration, bearerPost(env.BaseURL+"/v1/outbound/batch", token, batch),
		func(status int) bool { return status == http.StatusOK })
	res.BatchAccepted, res.BatchFailed = p.ok*int64(opts.BatchSize), p.failed
	res.BatchPerSec = p.perSec * float64(opts.BatchSize)
	res.BatchP50, res.BatchP99, res.batchCPU = p.p50, p.p99, p.cpu

	if !opts.SkipPgbench {
		res.ReferenceShape = "BEGIN; INSERT outbox row (unique tenant+idempotency key); INSERT its event row; COMMIT;"
		if err := env.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS bench_ref;
			CREATE TABLE IF NOT EXISTS bench_ref.outbox (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, account_id uuid NOT NULL,
				conversation_id text NOT NULL, idempotency_key text NOT NULL, text text NOT NULL,
				state text NOT NULL DEFAULT 'queued', created_at timestamptz NOT NULL DEFAULT now(), UNIQUE (tenant_id, idempotency_key));
			CREATE TABLE IF NOT EXISTS bench_ref.outbox_events (id bigserial PRIMARY KEY, outbox_id uuid NOT NULL, event text NOT NULL,
				created_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return res, err
		}
		// The event row names a fresh id: the reference has no foreign key
		// to check (MIO's events have none either).
		script := fmt.Sprintf(`\set r random(1, 2000000000)
BEGIN;
INSERT INTO bench_ref.outbox (id, tenant_id, account_id, conversation_id, idempotency_key, text) VALUES (gen_random_uuid(), '%s', '%s', 'C' || :r %% 1000, :client_id || '-' || :r || '-' || clock_timestamp(), '%s');
INSERT INTO bench_ref.outbox_events (outbox_id, event) VALUES (gen_random_uuid(), 'queued');
COMMIT;
`, tenant.ID, acct.ID, strings.ReplaceAll(text, "'", "''"))
		ref, err := env.pgbenchRun(ctx, script, opts.Clients, opts.Duration)
		if err != nil {
			return res, err
		}
		res.ReferenceTPS, res.refCPU, res.refTx = ref.tps, ref.cpu, ref.tx
		_ = env.Exec(ctx, "DROP SCHEMA bench_ref CASCADE")
	}
	return res, nil
}

// loadFigures are one load phase's figures.
type loadFigures struct {
	ok, failed    int64
	perSec        float64
	p50, p99, max time.Duration
	cpu           cpuUse
	// group0 and group1 read the server's group commits before and after.
	group0, group1 groupSnap
}

// runLoad sends the requests newRequest makes from clients clients, with
// the load generator loader (LoaderRaw or LoaderGo), for warmup, then
// measures for duration: requests answered ok(status) per second, their
// latencies, where the machine's CPU went, and the server's group commits
// of group ("ingest", "outbound"; "" for none).
func runLoad(ctx context.Context, env *Env, loader, group string, clients int, warmup, duration time.Duration,
	newRequest func() *loadRequest, ok func(status int) bool) loadFigures {
	l := startLoad(ctx, env, loader, group, clients, newRequest, ok)
	time.Sleep(warmup)
	l.measure()
	time.Sleep(duration)
	return l.stop()
}

// load is a running load phase (startLoad): its clients send until the
// method stop is called, and count what they send from the call to the
// method measure on.
type load struct {
	ctx                context.Context
	env                *Env
	group              string
	transport          *http.Transport
	measuring, halt    atomic.Bool
	accepted, failures atomic.Int64
	mu                 sync.Mutex
	latencies          []time.Duration
	wg                 sync.WaitGroup
	g0                 groupSnap
	cpu0               cpuSnap
	began              time.Time
}

// startLoad starts clients clients sending the requests newRequest makes
// with the load generator loader (see runLoad); nothing is counted until
// measure.
func startLoad(ctx context.Context, env *Env, loader, group string, clients int,
	newRequest func() *loadRequest, ok func(status int) bool) *load {
	const timeout = 30 * time.Second
	l := &load{ctx: ctx, env: env, group: group,
		transport: &http.Transport{MaxIdleConnsPerHost: clients * 2, MaxConnsPerHost: clients * 2}}
	client := &http.Client{Transport: l.transport, Timeout: timeout}
	for range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			local := make([]time.Duration, 0, 4096)
			var raw rawConn
			defer raw.close()
			for !l.halt.Load() && ctx.Err() == nil {
				lr := newRequest()
				var (
					status int
					err    error
				)
				start := time.Now()
				if loader == LoaderGo {
					var resp *http.Response
					if resp, err = client.Do(lr.httpRequest(ctx)); err == nil {
						status = resp.StatusCode
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				} else {
					status, err = raw.do(lr, timeout)
				}
				lat := time.Since(start)
				good := err == nil && ok(status)
				if l.measuring.Load() {
					if good {
						l.accepted.Add(1)
						local = append(local, lat)
					} else {
						l.failures.Add(1)
					}
				}
			}
			l.mu.Lock()
			l.latencies = append(l.latencies, local...)
			l.mu.Unlock()
		}()
	}
	return l
}

// measure starts counting: the measured window runs from here to stop.
func (l *load) measure() {
	if l.group != "" {
		l.g0 = l.env.groupNow(l.ctx, l.group)
	}
	l.cpu0 = l.env.cpuNow()
	l.measuring.Store(true)
	l.began = time.Now()
}

// stop ends the measured window, stops the clients and returns the
// window's figures.
func (l *load) stop() loadFigures {
	l.measuring.Store(false)
	elapsed := time.Since(l.began)
	cpu := l.cpu0.to(l.env.cpuNow())
	var g1 groupSnap
	if l.group != "" {
		g1 = l.env.groupNow(l.ctx, l.group)
	}
	l.halt.Store(true)
	l.wg.Wait()
	l.transport.CloseIdleConnections()
	f := loadFigures{ok: l.accepted.Load(), failed: l.failures.Load(), cpu: cpu, group0: l.g0, group1: g1}
	f.perSec = float64(f.ok) / elapsed.Seconds()
	SortDurations(l.latencies)
	f.p50, f.p99 = Percentile(l.latencies, 50), Percentile(l.latencies, 99)
	if len(l.latencies) > 0 {
		f.max = l.latencies[len(l.latencies)-1]
	}
	return f
}

// bearerPost makes POST requests of body() to url with a bearer token.
func bearerPost(url, token string, body func() []byte) func() *loadRequest {
	return func() *loadRequest {
		return &loadRequest{method: http.MethodPost, url: url, body: body(),
			header: [][2]string{{"Content-Type", "application/json"}, {"Authorization", "Bearer " + token}}}
	}
}

// Print writes the result as a small report.
func (r *ProduceResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench produce — POST /v1/outbound, %d clients (%s load generator), unique idempotency keys (server role api: accept only)\n", r.Clients, r.Loader)
	fmt.Fprintf(w, "  accepted/s        %10.0f   (%d accepted, %d failed)\n", r.PerSec, r.Accepted, r.Failed)
	fmt.Fprintf(w, "  latency p50       %10s\n", r.P50.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  latency p99       %10s   (target <= 50ms)\n", r.P99.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  latency max       %10s\n", r.Max.Round(10*time.Microsecond))
	printCPU(w, "send", r.cpu, r.Accepted+r.Failed)
	printGroup(w, r.group0, r.group1)
	if r.ReferenceTPS > 0 {
		fmt.Fprintf(w, "reference: pgbench, same database, %d clients, one commit per send: %s\n", r.Clients, r.ReferenceShape)
		fmt.Fprintf(w, "  pgbench tx/s      %10.0f\n", r.ReferenceTPS)
		printReferenceCPU(w, r.refCPU, r.refTx)
		fmt.Fprintf(w, "  ratio mio/pgbench %10.2f   (target >= 1.00)\n", r.PerSec/r.ReferenceTPS)
	}
	fmt.Fprintf(w, "POST /v1/outbound/batch — %d clients, %d commands per request\n", r.BatchClients, r.BatchSize)
	fmt.Fprintf(w, "  sends accepted/s  %10.0f   (%d sends, %d failed requests; target >= 20,000)\n", r.BatchPerSec, r.BatchAccepted, r.BatchFailed)
	fmt.Fprintf(w, "  request p50       %10s\n", r.BatchP50.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  request p99       %10s\n", r.BatchP99.Round(10*time.Microsecond))
	printCPU(w, "send", r.batchCPU, r.BatchAccepted)
}
