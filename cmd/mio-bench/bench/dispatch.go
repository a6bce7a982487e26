package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/migrations"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/workers"
)

// DispatchOptions configure the dispatch benchmark.
type DispatchOptions struct {
	// Messages queued in the throughput phase (and no-op jobs in the
	// reference). Default 50,000.
	Messages int
	// InsertBatch is the rows per enqueue transaction. Default 500.
	InsertBatch int
	// SteadyRate and SteadyDuration shape the latency phase: sends
	// enqueued at a steady rate. Defaults: half the measured throughput
	// (at most 2,000/s), for 10 s.
	SteadyRate     int
	SteadyDuration time.Duration
	// SkipReference skips River's no-op reference.
	SkipReference bool
	// ReplyRate is the rate of the reply phase: sends POSTed to
	// /v1/outbound one by one, timed to the provider's receipt, for
	// SteadyDuration. Default 20/s; negative skips it.
	ReplyRate int
	// ReplyPoisson spaces the reply phase's sends at random (exponential
	// gaps of mean 1/ReplyRate, as independent conversations would)
	// instead of evenly.
	ReplyPoisson bool
	// CPUProfile, when set, is where the server's CPU profile of the
	// throughput phase's first 5 s is written.
	CPUProfile string
	// AllocsProfile, when set, is where the server's allocation profile
	// (since it started) is written after the throughput phase.
	AllocsProfile string
	// RateLimited gives the account a rate limit too high to hold a send
	// back (rateLimitedRate), so that every claim goes the way a real
	// platform's do: candidates locked, tokens taken, then marked sending
	// (workers.Dispatcher.claimLimited).
	RateLimited bool
}

// DispatchResult holds the figures of one run.
type DispatchResult struct {
	RateLimited      bool
	Messages         int
	Elapsed          time.Duration
	PerSec           float64
	BulkP50, BulkP99 time.Duration
	SteadyRate       float64
	SteadyCount      int
	SteadyP50        time.Duration
	SteadyP99        time.Duration
	// SteadyStages split the steady phase's queue → hand-off.
	SteadyStages     rowStages
	ReferencePerSec  float64
	ReferenceElapsed time.Duration
	// Reply is the reply phase (nil when skipped).
	Reply *ReplyTrace
	// cpu and refCPU are where the machine's CPU went in the throughput
	// phase and in the reference.
	cpu, refCPU cpuUse
}

// Dispatch measures outbound dispatch through `mio serve` to a local fake
// provider that answers 200 at once (the generic webhook channel, no rate
// limit). Throughput: Messages sends enqueued in batches as fast as the
// database takes them while the server dispatches, timed from the first
// enqueue to the last hand-off the provider receives. Latency: sends
// enqueued at a steady rate, queue-to-handoff from the rows' timestamps.
// Reference, in the same run and database: River's own throughput for as
// many no-op jobs, enqueued the same way, worked by a River client with
// the dispatcher's settings (FetchCooldown 10ms, the dispatch queue's
// MaxWorkers).
func Dispatch(ctx context.Context, env *Env, opts DispatchOptions) (*DispatchResult, error) {
	if opts.Messages == 0 {
		opts.Messages = 50_000
	}
	if opts.InsertBatch == 0 {
		opts.InsertBatch = 500
	}
	if opts.SteadyDuration == 0 {
		opts.SteadyDuration = 10 * time.Second
	}
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 8, RuntimeRole: "mio_runtime", StatementTimeout: -1})
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	res := &DispatchResult{Messages: opts.Messages, RateLimited: opts.RateLimited}
	if !opts.SkipReference {
		if err := riverReference(ctx, env, pool, opts, res); err != nil {
			return res, fmt.Errorf("river reference: %w", err)
		}
	}

	tgt, err := newDispatchTarget(ctx, env, pool, "bench-dispatch", opts.RateLimited)
	if err != nil {
		return res, err
	}
	defer tgt.close()
	fake, enqueue := tgt.fake, tgt.enqueue

	// Warm-up: connections, caches, prepared statements.
	fake.expect(1000)
	if err := enqueue(ctx, 1000, func(i int) string { return fmt.Sprintf("warm-%d", i) }); err != nil {
		return res, err
	}
	if err := fake.wait(ctx, 60*time.Second); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}

	// Throughput: every send its own conversation, so ordering never
	// holds one back.
	fake.expect(opts.Messages)
	profiled := env.profileAfter(ctx, 0, 5*time.Second, opts.CPUProfile)
	cpu0 := env.cpuNow()
	start := time.Now()
	for done := 0; done < opts.Messages; done += opts.InsertBatch {
		n := min(opts.InsertBatch, opts.Messages-done)
		base := done
		if err := enqueue(ctx, n, func(i int) string { return fmt.Sprintf("bulk-%d", base+i) }); err != nil {
			return res, err
		}
	}
	if err := fake.wait(ctx, 10*time.Minute); err != nil {
		return res, err
	}
	res.cpu = cpu0.to(env.cpuNow())
	res.Elapsed = fake.doneAt().Sub(start)
	if err := profiled(); err != nil {
		return res, err
	}
	if opts.AllocsProfile != "" {
		if err := env.AllocsProfile(ctx, opts.AllocsProfile); err != nil {
			return res, err
		}
	}
	res.PerSec = float64(opts.Messages) / res.Elapsed.Seconds()
	if res.BulkP50, res.BulkP99, _, err = handoffLatency(ctx, pool, tgt.tenantID, "bulk-%"); err != nil {
		return res, err
	}

	// Latency at a steady rate.
	rate := opts.SteadyRate
	if rate == 0 {
		rate = min(2000, max(100, int(res.PerSec/2)))
	}
	tick, ticks, perTick := steadyTicks(rate, opts.SteadyDuration)
	fake.expect(perTick(ticks))
	t := time.NewTicker(tick)
	steadyStart := time.Now()
	for k := range ticks {
		<-t.C
		base, n := perTick(k), perTick(k+1)-perTick(k)
		if err := enqueue(ctx, n, func(i int) string { return fmt.Sprintf("steady-%d", base+i) }); err != nil {
			t.Stop()
			return res, err
		}
	}
	t.Stop()
	res.SteadyRate = float64(perTick(ticks)) / time.Since(steadyStart).Seconds()
	if err := fake.wait(ctx, 5*time.Minute); err != nil {
		return res, err
	}
	res.SteadyP50, res.SteadyP99, res.SteadyCount, err = handoffLatency(ctx, pool, tgt.tenantID, "steady-%")
	if err == nil {
		res.SteadyStages, err = stagesOf(ctx, pool, tgt.tenantID, "steady-%")
	}
	if err != nil || opts.ReplyRate < 0 {
		return res, err
	}
	res.Reply, err = replyLatency(ctx, env, tgt, cmp.Or(opts.ReplyRate, 20), opts.SteadyDuration, opts.ReplyPoisson)
	return res, err
}

// steadyTicks paces rate sends per second over d: one enqueue per tick
// (every 10 ms, or every 1/rate below 100/s), and perTick(k) sends
// before tick k, so that fractions add up to the rate.
func steadyTicks(rate int, d time.Duration) (tick time.Duration, ticks int, perTick func(k int) int) {
	rate = max(1, rate)
	tick = max(10*time.Millisecond, time.Second/time.Duration(rate))
	ticks = max(1, int(d/tick))
	return tick, ticks, func(k int) int { return int(int64(k) * int64(rate) * int64(tick) / int64(time.Second)) }
}

// rateLimitedRate is the rate and burst of a rate-limited bench account:
// the highest an account takes, so that tokens never hold a send back and
// the figure is the claim path's cost.
const rateLimitedRate = 1e6

// dispatchTarget is what the dispatch benchmarks send to: a tenant with
// one webhook account (no rate limit, or rateLimitedRate) whose endpoint
// is a local fake provider answering 200 at once (fake), or a receiver
// the benchmark runs itself (fake nil).
type dispatchTarget struct {
	pool     *pgxpool.Pool
	tenantID uuid.UUID
	account  uuid.UUID
	sends    *outbox.Service
	fake     *fakeEndpoint
}

func newDispatchTarget(ctx context.Context, env *Env, pool *pgxpool.Pool, name string, rateLimited bool) (*dispatchTarget, error) {
	fake, err := newFakeEndpoint()
	if err != nil {
		return nil, err
	}
	t, err := newWebhookTarget(ctx, env, pool, name, fake.url, newWebhookSecret(), rateLimited)
	if err != nil {
		fake.close()
		return nil, err
	}
	t.fake = fake
	return t, nil
}

// newWebhookSecret returns a fresh whsec_ secret of 32 random bytes.
func newWebhookSecret() string {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return "whsec_" + base64.StdEncoding.EncodeToString(secret)
}

// newWebhookTarget creates a tenant with one webhook account sending to
// endpoint, signed with secret (no rate limit, or rateLimitedRate). The
// target has no fake provider: the caller runs the endpoint.
func newWebhookTarget(ctx context.Context, env *Env, pool *pgxpool.Pool, name, endpoint, secret string, rateLimited bool) (*dispatchTarget, error) {
	box, _ := secretbox.New(env.MasterKey)
	svc := admin.New(pool, box, env.BaseURL)
	tenant, _, err := svc.TenantCreate(ctx, tenantName(name))
	if err != nil {
		return nil, err
	}
	settings, _ := json.Marshal(map[string]string{"endpoint_url": endpoint})
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook",
		WebhookSecret: secret, Settings: settings})
	if err == nil && rateLimited {
		rate, burst := float64(rateLimitedRate), int32(rateLimitedRate)
		_, err = svc.AccountUpdate(ctx, tenant.ID, acct.ID, admin.AccountUpdate{
			RateLimitPerSec: admin.Optional[float64]{Set: true, Value: &rate},
			RateLimitBurst:  admin.Optional[int32]{Set: true, Value: &burst}})
	}
	if err != nil {
		return nil, err
	}
	inserter, err := workers.NewClient(pool, nil, workers.Config{})
	if err != nil {
		return nil, err
	}
	return &dispatchTarget{pool: pool, tenantID: tenant.ID, account: acct.ID, sends: outbox.New(pool, inserter)}, nil
}

// enqueue accepts n sends in one transaction, send i to conversation
// conv(i), as POST /v1/outbound would one by one.
func (t *dispatchTarget) enqueue(ctx context.Context, n int, conv func(i int) string) error {
	_, err := t.enqueueIDs(ctx, n, conv)
	return err
}

// enqueueIDs is enqueue, returning the sends' message ids.
func (t *dispatchTarget) enqueueIDs(ctx context.Context, n int, conv func(i int) string) ([]uuid.UUID, error) {
	rows := make([]db.OutboxNew, n)
	for i := range rows {
		rows[i] = db.OutboxNew{AccountID: t.account, ChannelType: "webhook", ConversationID: conv(i),
			IdempotencyKey: uuid.NewString(), RequestSHA256: make([]byte, 32), Text: "bench reply"}
	}
	err := db.InTenantTx(ctx, t.pool, t.tenantID, func(tx pgx.Tx) error {
		_, err := t.sends.EnqueueTx(ctx, tx, t.tenantID, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, n)
	for i, r := range rows {
		ids[i] = r.ID // set by EnqueueTx
	}
	return ids, nil
}

func (t *dispatchTarget) close() {
	if t.fake != nil {
		t.fake.close()
	}
}

// handoffLatency returns the p50 and p99 of created_at → handed_off_at
// of the tenant's messages whose conversation matches like.
func handoffLatency(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, like string) (p50, p99 time.Duration, n int, err error) {
	var a, b float64
	err = db.InTenantTx(ctx, pool, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `
			SELECT count(*),
			       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM handed_off_at - created_at)), 0),
			       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM handed_off_at - created_at)), 0)
			FROM mio.outbox WHERE conversation_id LIKE $1 AND handoff_state = 'handed_off'`, like).Scan(&n, &a, &b)
	})
	return time.Duration(a * float64(time.Second)), time.Duration(b * float64(time.Second)), n, err
}

// noopArgs is the reference's job: nothing to do.
type noopArgs struct{}

func (noopArgs) Kind() string { return "mio.bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	done *atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.done.Add(1)
	return nil
}

// riverReference enqueues opts.Messages no-op jobs the way the benchmark
// enqueues sends (batches of InsertBatch per transaction) while a River
// client with the dispatcher's settings works them, and times it.
func riverReference(ctx context.Context, env *Env, pool *pgxpool.Pool, opts DispatchOptions, res *DispatchResult) error {
	const queue = "bench_noop"
	var done atomic.Int64
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{done: &done})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:        migrations.RiverSchema,
		Queues:        map[string]river.QueueConfig{queue: {MaxWorkers: workers.DispatchMaxWorkersDefault}},
		Workers:       ws,
		FetchCooldown: 10 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(sctx)
	}()
	cpu0 := env.cpuNow()
	start := time.Now()
	for n := 0; n < opts.Messages; n += opts.InsertBatch {
		params := make([]river.InsertManyParams, min(opts.InsertBatch, opts.Messages-n))
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{}, InsertOpts: &river.InsertOpts{Queue: queue}}
		}
		err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
			_, err := client.InsertManyTx(ctx, tx, params)
			return err
		})
		if err != nil {
			return err
		}
	}
	deadline := time.Now().Add(10 * time.Minute)
	for done.Load() < int64(opts.Messages) {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d jobs worked", done.Load(), opts.Messages)
		}
		time.Sleep(time.Millisecond)
	}
	res.ReferenceElapsed = time.Since(start)
	res.refCPU = cpu0.to(env.cpuNow())
	res.ReferencePerSec = float64(opts.Messages) / res.ReferenceElapsed.Seconds()
	// The completed jobs stay (as River keeps them until its cleaner runs):
	// deleting and vacuuming them here would leave river_job with the
	// statistics of an empty table for the dispatch phase.
	return nil
}

// Print writes the figures.
func (r *DispatchResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench dispatch — outbox -> River dispatch -> webhook adapter -> local fake provider (instant 200)\n")
	if r.RateLimited {
		fmt.Fprintf(w, "  account rate-limited at %.0f/s, burst %.0f: every claim takes tokens (the path of every platform but the generic webhook)\n",
			float64(rateLimitedRate), float64(rateLimitedRate))
	}
	fmt.Fprintf(w, "  sends/s            %10.0f   (%d sends in %s, enqueued in batches while dispatching; target >= 2,000)\n",
		r.PerSec, r.Messages, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  queue->handoff p50 %10s   (that run: includes waiting behind the whole backlog)\n", r.BulkP50.Round(time.Millisecond))
	fmt.Fprintf(w, "  queue->handoff p99 %10s\n", r.BulkP99.Round(time.Millisecond))
	printDispatchCPU(w, "send", "server", "bench (enqueue, fake provider)", r.cpu, int64(r.Messages))
	fmt.Fprintf(w, "steady load, %.0f sends/s, %d sends\n", r.SteadyRate, r.SteadyCount)
	fmt.Fprintf(w, "  queue->handoff p50 %10s\n", r.SteadyP50.Round(100*time.Microsecond))
	fmt.Fprintf(w, "  queue->handoff p99 %10s\n", r.SteadyP99.Round(100*time.Microsecond))
	r.SteadyStages.print(w)
	if r.ReferencePerSec > 0 {
		fmt.Fprintf(w, "reference: River no-op jobs, same count, enqueued the same way, FetchCooldown 10ms, %d workers\n", workers.DispatchMaxWorkersDefault)
		fmt.Fprintf(w, "  jobs/s             %10.0f   (%s)\n", r.ReferencePerSec, r.ReferenceElapsed.Round(time.Millisecond))
		printDispatchCPU(w, "job", "server (idle)", "River client (bench)", r.refCPU, int64(r.Messages))
		target := "target >= 0.50"
		if r.RateLimited {
			target = "the target is for accounts without limits"
		}
		fmt.Fprintf(w, "  ratio mio/river    %10.2f   (%s)\n", r.PerSec/r.ReferencePerSec, target)
	}
	if r.Reply != nil {
		r.Reply.Print(w)
	}
}

// fakeEndpoint is the provider: a Standard Webhooks receiver that answers
// 200 at once and counts deliveries.
type fakeEndpoint struct {
	url    string
	srv    *rawProvider
	count  atomic.Int64
	target atomic.Int64
	at     atomic.Int64 // unix nanos of the target-th delivery
	mu     sync.Mutex
	done   chan struct{}
	// tracking makes the endpoint record when each conversation's
	// delivery arrived (received, under mu): the reply phase's provider
	// receipt times.
	tracking atomic.Bool
	received map[string]time.Time
}

func newFakeEndpoint() (*fakeEndpoint, error) {
	f := &fakeEndpoint{}
	srv, err := newRawProvider(f.delivered, f.tracking.Load)
	if err != nil {
		return nil, err
	}
	f.srv, f.url = srv, "http://"+srv.addr()+"/hook"
	return f, nil
}

// delivered counts a delivery (its body is there while tracking).
func (f *fakeEndpoint) delivered(body []byte, at time.Time) {
	if body != nil {
		f.record(bytes.NewReader(body), at)
	}
	if f.count.Add(1) == f.target.Load() {
		f.at.Store(time.Now().UnixNano())
		f.mu.Lock()
		close(f.done)
		f.mu.Unlock()
	}
}

// expect resets the count and waits for n more deliveries.
func (f *fakeEndpoint) expect(n int) {
	f.mu.Lock()
	f.done = make(chan struct{})
	f.mu.Unlock()
	f.target.Store(int64(n))
	f.count.Store(0)
}

func (f *fakeEndpoint) wait(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	done := f.done
	f.mu.Unlock()
	select {
	case <-done:
		return f.srv.err()
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		if err := f.srv.err(); err != nil {
			return fmt.Errorf("the provider received %d of %d sends; a request it could not read: %w", f.count.Load(), f.target.Load(), err)
		}
		return fmt.Errorf("the provider received %d of %d sends", f.count.Load(), f.target.Load())
	}
}

func (f *fakeEndpoint) doneAt() time.Time { return time.Unix(0, f.at.Load()) }

func (f *fakeEndpoint) close() { f.srv.close() }

// printDispatchCPU is printCPU for the dispatch phases, whose load
// generator is the bench process doing other work: enqueueing and the fake
// provider, or River's reference client.
func printDispatchCPU(w io.Writer, label, server, loader string, u cpuUse, n int64) {
	if per, idle, ok := u.perOp(n); ok {
		fmt.Fprintf(w, "  CPU µs per %-7s %s %.0f, %s %.0f, postgres and the rest %.0f; machine %.0f busy, %.0f%% idle\n",
			label, server, per(u.server), loader, per(u.loader), per(u.rest()), per(u.busy), idle)
	}
}
