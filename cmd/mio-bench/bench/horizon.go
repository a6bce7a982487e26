package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/client"
)

// Hold kinds of the horizon benchmark.
const (
	HoldWriter  = "writer"  // one transaction with an XID held open
	HoldReaders = "readers" // four REPEATABLE READ transactions holding snapshots
)

// HorizonOptions configure the horizon benchmark.
type HorizonOptions struct {
	Rate    int           // webhooks per second offered; default 200
	Pullers int           // concurrent long-polling pullers; default 8
	Clean   time.Duration // clean phase before the hold; default 30s
	Hold    time.Duration // how long the transaction(s) stay open; default 2m
	After   time.Duration // phase after the hold ends; default 15s
	Kind    string        // HoldWriter (default) or HoldReaders
	Sample  time.Duration // sampling interval of the table statistics; default 10s
	// Ordering of the consumer: none (default) or conversation.
	Ordering string
}

// HorizonPhase holds the figures of one phase.
type HorizonPhase struct {
	Name            string
	Sent, Delivered int
	Duration        time.Duration
	P50, P95, P99   time.Duration
}

// HorizonSample is one sample of the database statistics.
type HorizonSample struct {
	At            time.Duration // since the start
	Phase         string
	DeadTuples    int64 // n_dead_tup summed over MIO's tables (schemas mio and river)
	Pulls         int64 // pulls in the interval
	RowsPerPull   float64
	TopDeadTables string
}

// HorizonResult holds the figures of one run.
type HorizonResult struct {
	Opts    HorizonOptions
	Phases  []HorizonPhase
	Samples []HorizonSample
}

// Horizon offers webhooks at a steady rate to one consumer pulled by
// several long-polling pullers (pull + ack over HTTP) through three
// phases: clean, while another session holds a writing transaction (or
// four REPEATABLE READ snapshots) open, and after. It reports delivery and
// end-to-end latency (webhook answered 200 -> pull returned it) per phase,
// and samples dead tuples over MIO's tables and the inbox stream index
// tuples read per pull. The clean phase is the reference.
func Horizon(ctx context.Context, env *Env, opts HorizonOptions) (*HorizonResult, error) {
	opts.defaults()
	cs, err := newConsumerSetup(ctx, env, "bench-horizon")
	if err != nil {
		return nil, err
	}
	defer cs.pool.Close()
	if opts.Ordering != "" {
		if _, err := cs.client.PutConsumer(ctx, "bench", client.ConsumerConfig{MaxAckPending: 100000, Ordering: opts.Ordering}); err != nil {
			return nil, err
		}
	}
	stats, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer stats.Close(context.Background())

	r := &horizonRun{opts: opts, env: env, client: cs.client, url: env.BaseURL + "/webhooks/webhook/" + cs.account.ID.String(),
		secret: cs.secret, sentAt: map[string]sendMark{}, start: time.Now()}
	pctx, stopPullers := context.WithCancel(ctx)
	var pullers sync.WaitGroup
	for range opts.Pullers {
		pullers.Add(1)
		go func() { defer pullers.Done(); r.pull(pctx) }()
	}
	sctx, stopSampler := context.WithCancel(ctx)
	sampled := make(chan []HorizonSample)
	go func() { sampled <- r.sample(sctx, stats) }()

	total := opts.Clean + opts.Hold + opts.After
	holdErr := make(chan error, 1)
	go func() {
		select {
		case <-time.After(opts.Clean):
		case <-ctx.Done():
			holdErr <- ctx.Err()
			return
		}
		holdErr <- r.hold(ctx)
	}()
	r.send(ctx, total)
	err = <-holdErr
	// Let the last deliveries arrive.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && r.delivered.Load() < r.sent.Load() {
		time.Sleep(50 * time.Millisecond)
	}
	stopPullers()
	pullers.Wait()
	stopSampler()
	res := &HorizonResult{Opts: opts, Samples: <-sampled}
	res.Phases = r.phases()
	return res, err
}

func (o *HorizonOptions) defaults() {
	if o.Rate == 0 {
		o.Rate = 200
	}
	if o.Pullers == 0 {
		o.Pullers = 8
	}
	if o.Clean == 0 {
		o.Clean = 30 * time.Second
	}
	if o.Hold == 0 {
		o.Hold = 2 * time.Minute
	}
	if o.After == 0 {
		o.After = 15 * time.Second
	}
	if o.Kind == "" {
		o.Kind = HoldWriter
	}
	if o.Sample == 0 {
		o.Sample = 10 * time.Second
	}
}

type sendMark struct {
	at    time.Time
	phase string
}

type horizonRun struct {
	opts      HorizonOptions
	env       *Env
	client    *client.Client
	url       string
	secret    string
	start     time.Time
	holdStart atomic.Int64 // ns since start; 0 before the hold
	holdEnd   atomic.Int64 // ns since start; 0 before the hold ends
	sent      atomic.Int64
	delivered atomic.Int64
	pulls     atomic.Int64

	mu     sync.Mutex
	sentAt map[string]sendMark
	lats   map[string][]time.Duration // by phase of the send
}

func (r *horizonRun) phase(at time.Time) string {
	since := at.Sub(r.start).Nanoseconds()
	switch hs, he := r.holdStart.Load(), r.holdEnd.Load(); {
	case hs == 0 || since < hs:
		return "clean"
	case he == 0 || since < he:
		return "hold"
	default:
		return "after"
	}
}

// hold opens the transaction(s) and keeps them open for opts.Hold.
func (r *horizonRun) hold(ctx context.Context) error {
	n, begin := 1, "BEGIN; SELECT pg_current_xact_id();"
	if r.opts.Kind == HoldReaders {
		n, begin = 4, "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class;"
	}
	conns := make([]*pgx.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_, _ = c.Exec(context.Background(), "ROLLBACK")
			_ = c.Close(context.Background())
		}
	}()
	for range n {
		c, err := pgx.Connect(ctx, r.env.DatabaseURL)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		if _, err := c.Exec(ctx, begin); err != nil {
			return err
		}
	}
	r.holdStart.Store(time.Since(r.start).Nanoseconds())
	select {
	case <-time.After(r.opts.Hold):
	case <-ctx.Done():
	}
	for _, c := range conns {
		_, _ = c.Exec(context.Background(), "ROLLBACK")
	}
	r.holdEnd.Store(time.Since(r.start).Nanoseconds())
	return ctx.Err()
}

// send offers webhooks at opts.Rate for d.
func (r *horizonRun) send(ctx context.Context, d time.Duration) {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	tick := time.NewTicker(time.Second / time.Duration(r.opts.Rate))
	defer tick.Stop()
	deadline := r.start.Add(d)
	var wg sync.WaitGroup
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("hz_%d_%d", r.start.UnixNano(), i)
			body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":"hz-%d"},"sender":{"id":"u"},"text":"hi"}}`,
				time.Now().UTC().Format(time.RFC3339), i%20))
			now := time.Now()
			sig, _ := webhook.Sign(r.secret, id, now, body)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("webhook-id", id)
			req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
			req.Header.Set("webhook-signature", sig)
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return
			}
			at := time.Now()
			r.mu.Lock()
			if _, seen := r.sentAt[id]; !seen {
				r.sentAt[id] = sendMark{at: at, phase: r.phase(now)}
			}
			r.mu.Unlock()
			r.sent.Add(1)
		}()
	}
	wg.Wait()
}

// pull long-polls and acks until ctx ends, recording latencies.
func (r *horizonRun) pull(ctx context.Context) {
	for ctx.Err() == nil {
		ds, err := r.client.Pull(ctx, "bench", 100, 5*time.Second)
		now := time.Now()
		if err != nil {
			if ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		r.pulls.Add(1)
		ids := make([]uuid.UUID, 0, len(ds))
		r.mu.Lock()
		if r.lats == nil {
			r.lats = map[string][]time.Duration{}
		}
		for _, d := range ds {
			ids = append(ids, d.DeliveryID)
			// A delivery can arrive before the sender recorded its 200:
			// it is then measured from now (latency 0), rare and small.
			m, ok := r.sentAt[d.Message.SourceMessageID]
			if !ok {
				m = sendMark{at: now, phase: r.phase(now)}
				r.sentAt[d.Message.SourceMessageID] = m
			}
			r.lats[m.phase] = append(r.lats[m.phase], max(now.Sub(m.at), 0))
		}
		r.mu.Unlock()
		r.delivered.Add(int64(len(ds)))
		if len(ids) > 0 {
			_, _ = r.client.Ack(context.WithoutCancel(ctx), "bench", ids...)
		}
	}
}

func (r *horizonRun) phases() []HorizonPhase {
	r.mu.Lock()
	defer r.mu.Unlock()
	sent := map[string]int{}
	for _, m := range r.sentAt {
		sent[m.phase]++
	}
	hs, he := time.Duration(r.holdStart.Load()), time.Duration(r.holdEnd.Load())
	durs := map[string]time.Duration{"clean": hs, "hold": he - hs, "after": r.opts.Clean + r.opts.Hold + r.opts.After - he}
	var out []HorizonPhase
	for _, name := range []string{"clean", "hold", "after"} {
		l := r.lats[name]
		SortDurations(l)
		out = append(out, HorizonPhase{Name: name, Sent: sent[name], Delivered: len(l), Duration: durs[name],
			P50: Percentile(l, 50), P95: Percentile(l, 95), P99: Percentile(l, 99)})
	}
	return out
}

// sample reads the statistics every opts.Sample until ctx ends.
func (r *horizonRun) sample(ctx context.Context, conn *pgx.Conn) []HorizonSample {
	var out []HorizonSample
	lastRead, lastPulls := int64(-1), int64(0)
	tick := time.NewTicker(r.opts.Sample)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		var (
			dead, read int64
			top        []string
		)
		rows, err := conn.Query(ctx, `SELECT schemaname || '.' || relname, n_dead_tup FROM pg_stat_user_tables
			WHERE schemaname IN ('mio', 'river') ORDER BY n_dead_tup DESC`)
		if err != nil {
			return out
		}
		for rows.Next() {
			var (
				name string
				n    int64
			)
			if rows.Scan(&name, &n) == nil {
				dead += n
				if n > 0 && len(top) < 3 {
					top = append(top, fmt.Sprintf("%s %d", name, n))
				}
			}
		}
		rows.Close()
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(idx_tup_read), 0)::bigint FROM pg_stat_user_indexes
			WHERE schemaname = 'mio' AND relname = 'inbox' AND indexrelname <> 'inbox_pkey'`).Scan(&read); err != nil {
			return out
		}
		pulls := r.pulls.Load()
		s := HorizonSample{At: time.Since(r.start).Round(time.Second), Phase: r.phase(time.Now()), DeadTuples: dead,
			Pulls: pulls - lastPulls, TopDeadTables: strings.Join(top, ", ")}
		if lastRead >= 0 && s.Pulls > 0 {
			s.RowsPerPull = float64(read-lastRead) / float64(s.Pulls)
		}
		lastRead, lastPulls = read, pulls
		out = append(out, s)
	}
}

// Print writes the report.
func (r *HorizonResult) Print(w io.Writer) {
	what := "one writing transaction (BEGIN; SELECT pg_current_xact_id()) held open"
	if r.Opts.Kind == HoldReaders {
		what = "four REPEATABLE READ transactions holding their snapshots"
	}
	ordering := r.Opts.Ordering
	if ordering == "" {
		ordering = "none"
	}
	fmt.Fprintf(w, "mio-bench horizon — %d webhooks/s offered, %d long-polling pullers (pull + ack over HTTP, ordering %s); hold: %s for %s\n",
		r.Opts.Rate, r.Opts.Pullers, ordering, what, r.Opts.Hold)
	fmt.Fprintf(w, "  %-6s %9s %9s %10s %10s %10s %10s\n", "phase", "sent/s", "deliv/s", "e2e p50", "e2e p95", "e2e p99", "delivered")
	var clean HorizonPhase
	for _, p := range r.Phases {
		secs := p.Duration.Seconds()
		if secs <= 0 {
			secs = 1
		}
		fmt.Fprintf(w, "  %-6s %9.0f %9.0f %10s %10s %10s %9.1f%%\n", p.Name, float64(p.Sent)/secs, float64(p.Delivered)/secs,
			p.P50.Round(10*time.Microsecond), p.P95.Round(10*time.Microsecond), p.P99.Round(10*time.Microsecond),
			100*float64(p.Delivered)/float64(max(p.Sent, 1)))
		if p.Name == "clean" {
			clean = p
		}
		if p.Name == "hold" && clean.P95 > 0 {
			fmt.Fprintf(w, "  hold vs clean: delivered %.1f%% of sent (target >= 95%%), e2e p95 %.2f x clean (target <= 2)\n",
				100*float64(p.Delivered)/float64(max(p.Sent, 1)), float64(p.P95)/float64(clean.P95))
		}
	}
	fmt.Fprintf(w, "samples (dead tuples summed over schemas mio and river; inbox stream-index tuples read per pull):\n")
	deads := map[string][]int64{}
	for _, s := range r.Samples {
		fmt.Fprintf(w, "  %6s %-6s dead %8d  pulls %6d  rows/pull %7.1f  %s\n", s.At, s.Phase, s.DeadTuples, s.Pulls, s.RowsPerPull, s.TopDeadTables)
		deads[s.Phase] = append(deads[s.Phase], s.DeadTuples)
	}
	for _, ph := range []string{"clean", "hold", "after"} {
		d := deads[ph]
		if len(d) == 0 {
			continue
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Fprintf(w, "  dead tuples %-6s median %d, max %d\n", ph, d[len(d)/2], d[len(d)-1])
	}
}
