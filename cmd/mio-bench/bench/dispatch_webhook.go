package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/workers"
)

// DispatchWebhookOptions configure the dispatch-webhook benchmark.
type DispatchWebhookOptions struct {
	// Sends queued in the measured phase (and no-op jobs in the
	// reference). Default 20,000.
	Sends int
	// Lanes, when above 0, spreads the sends over this many conversations
	// in turn: a conversation is an ordered lane, which sends one message
	// at a time. Default: each send a conversation of its own.
	Lanes int
	// Clients, when above 0, post signed Slack webhooks at full speed
	// (ingest's load) during the reference and the measured phase.
	Clients int
	// Loader is the clients' load generator, LoaderRaw (default) or
	// LoaderGo.
	Loader string
	// Warmup is how long the clients post before a phase is measured.
	// Default 2s.
	Warmup time.Duration
	// SkipReference skips River's no-op reference.
	SkipReference bool
	// CPUProfile, when set, is where the server's CPU profile of the
	// measured phase's first 5 s is written.
	CPUProfile string
	// AllocsProfile, when set, is where the server's allocation profile
	// (since it started) is written after the measured phase.
	AllocsProfile string
}

// DispatchWebhookResult holds the figures of one run.
type DispatchWebhookResult struct {
	Sends   int
	Lanes   int
	Clients int
	Loader  string
	// PerSec is Sends over the time from the receiver's first accepted
	// delivery to its last; Span is that time.
	PerSec float64
	Span   time.Duration
	// Latency is queue -> receiver: from the commit that queued a send to
	// its delivery's arrival at the receiver.
	Latency Quantiles
	// Stages split queue -> hand-off by the rows' own timestamps.
	Stages     rowStages
	Rejected   int64
	Duplicates int64
	// Conns are the connections the server opened to the receiver over
	// the run (warm-up included).
	Conns int64
	// Ingest is the clients' load during the measured phase (Clients > 0).
	Ingest loadFigures
	// ReferencePerSec and ReferenceElapsed are River's no-op jobs;
	// RefIngest the clients' load during them.
	ReferencePerSec  float64
	ReferenceElapsed time.Duration
	RefIngest        loadFigures
	cpu              cpuUse
}

// DispatchWebhook measures sends dispatched end to end through `mio serve`
// to a receiver that does what an agent's endpoint does (signedReceiver:
// net/http, each signature verified, 200 with an id), instead of the
// dispatch benchmark's raw provider. Sends are queued in transactions of
// 500 (the dispatch benchmark's enqueue), each to a conversation of its
// own (or over Lanes conversations), while the server dispatches; the rate runs from the first accepted
// delivery to the last, and every send must be handed_off in the outbox.
// With Clients, that many clients post signed Slack webhooks at full
// speed meanwhile (ingest's load), and their rate is reported too.
// Reference, in the same run and database and under the same load:
// River's throughput for as many no-op jobs (as `mio-bench dispatch`).
func DispatchWebhook(ctx context.Context, env *Env, opts DispatchWebhookOptions) (*DispatchWebhookResult, error) {
	if opts.Sends == 0 {
		opts.Sends = 20_000
	}
	if opts.Warmup == 0 {
		opts.Warmup = 2 * time.Second
	}
	var err error
	if opts.Loader, err = checkLoader(opts.Loader); err != nil {
		return nil, err
	}
	res := &DispatchWebhookResult{Sends: opts.Sends, Lanes: opts.Lanes, Clients: opts.Clients, Loader: opts.Loader}
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 8, RuntimeRole: "mio_runtime", StatementTimeout: -1})
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	// underLoad runs phase while the clients post (when there are any),
	// and returns their figures of the phase.
	underLoad := func(phase func() error) (loadFigures, error) {
		if opts.Clients <= 0 {
			return loadFigures{}, phase()
		}
		newRequest, _, err := slackWebhooks(ctx, env, 700)
		if err != nil {
			return loadFigures{}, err
		}
		l := startLoad(ctx, env, opts.Loader, "ingest", opts.Clients, newRequest, func(status int) bool { return status == http.StatusOK })
		time.Sleep(opts.Warmup)
		l.measure()
		err = phase()
		return l.stop(), err
	}

	if !opts.SkipReference {
		var ref DispatchResult
		res.RefIngest, err = underLoad(func() error {
			return riverReference(ctx, env, pool, DispatchOptions{Messages: opts.Sends, InsertBatch: 500}, &ref)
		})
		if err != nil {
			return res, fmt.Errorf("river reference: %w", err)
		}
		res.ReferencePerSec, res.ReferenceElapsed = ref.ReferencePerSec, ref.ReferenceElapsed
	}

	secret := newWebhookSecret()
	rcv, err := newSignedReceiver(secret)
	if err != nil {
		return res, err
	}
	defer rcv.close()
	tgt, err := newWebhookTarget(ctx, env, pool, "bench-dispatch-webhook", rcv.url, secret, false)
	if err != nil {
		return res, err
	}
	defer func() {
		res.Rejected, res.Duplicates, res.Conns = rcv.rejected.Load(), rcv.duplicates.Load(), rcv.conns.Load()
	}()

	// Warm-up: connections to the receiver, caches, prepared statements.
	const warm = 1000
	rcv.expect(warm)
	if err := tgt.enqueue(ctx, warm, func(i int) string { return fmt.Sprintf("whbwarm-%d", i) }); err != nil {
		return res, err
	}
	if err := rcv.wait(ctx, time.Minute); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}

	queued := make(map[string]time.Time, opts.Sends) // by message id
	res.Ingest, err = underLoad(func() error {
		rcv.expect(opts.Sends)
		profiled := env.profileAfter(ctx, 0, 5*time.Second, opts.CPUProfile)
		cpu0 := env.cpuNow()
		const batch = 500
		for done := 0; done < opts.Sends; done += batch {
			n := min(batch, opts.Sends-done)
			conv := func(i int) string { return fmt.Sprintf("whb-%d", done+i) }
			if opts.Lanes > 0 {
				conv = func(i int) string { return fmt.Sprintf("whb-%d", (done+i)%opts.Lanes) }
			}
			ids, err := tgt.enqueueIDs(ctx, n, conv)
			if err != nil {
				return err
			}
			at := time.Now()
			for _, id := range ids {
				queued[id.String()] = at
			}
		}
		if err := rcv.wait(ctx, 10*time.Minute); err != nil {
			return err
		}
		res.cpu = cpu0.to(env.cpuNow())
		return profiled()
	})
	if err != nil {
		return res, err
	}
	first, last := rcv.span()
	res.Span = last.Sub(first)
	res.PerSec = float64(opts.Sends) / res.Span.Seconds()
	var lat []time.Duration
	for id, at := range rcv.receivedTimes() {
		if q, ok := queued[id]; ok {
			lat = append(lat, at.Sub(q))
		}
	}
	res.Latency = quantiles(lat)
	if opts.AllocsProfile != "" {
		if err := env.AllocsProfile(ctx, opts.AllocsProfile); err != nil {
			return res, err
		}
	}
	if err := waitHandedOff(ctx, tgt, "whb-%", opts.Sends); err != nil {
		return res, err
	}
	res.Stages, err = stagesOf(ctx, pool, tgt.tenantID, "whb-%")
	return res, err
}

// waitHandedOff waits (at most a minute) until n of the target's
// messages whose conversation matches like are handed_off: the receiver
// answers before the server records the hand-off.
func waitHandedOff(ctx context.Context, tgt *dispatchTarget, like string, n int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var got int
		err := db.InTenantTx(ctx, tgt.pool, tgt.tenantID, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM mio.outbox WHERE conversation_id LIKE $1 AND handoff_state = 'handed_off'`,
				like).Scan(&got)
		})
		switch {
		case err != nil:
			return err
		case got == n:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d sends handed_off in the outbox", got, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Print writes the figures.
func (r *DispatchWebhookResult) Print(w io.Writer) {
	load := "API idle"
	if r.Clients > 0 {
		load = fmt.Sprintf("while %d clients post signed Slack webhooks (%s load generator)", r.Clients, r.Loader)
	}
	fmt.Fprintf(w, "mio-bench dispatch-webhook — outbox -> River dispatch -> webhook adapter -> local receiver (net/http, signature verified, 200 with an id), %s\n", load)
	target := "1,500"
	if r.Clients > 0 {
		target = "1,000"
	}
	lanes := "each to a conversation of its own"
	if r.Lanes > 0 {
		lanes = fmt.Sprintf("over %d conversations (ordered lanes)", r.Lanes)
	}
	if r.Lanes > 0 {
		target = "— (the targets are for sends to conversations of their own)"
	} else {
		target = ">= " + target
	}
	fmt.Fprintf(w, "  sends/s            %10.0f   (%d sends %s, first to last delivery in %s; target %s)\n",
		r.PerSec, r.Sends, lanes, r.Span.Round(time.Millisecond), target)
	fmt.Fprintf(w, "  queue->receiver p50 %9s   (queued in transactions of 500 while dispatching: includes the wait behind the backlog)\n",
		r.Latency.P50.Round(100*time.Microsecond))
	fmt.Fprintf(w, "  queue->receiver p99 %9s\n", r.Latency.P99.Round(100*time.Microsecond))
	r.Stages.print(w)
	fmt.Fprintf(w, "  rejected signatures %9d   (must be 0); duplicate deliveries %d\n", r.Rejected, r.Duplicates)
	fmt.Fprintf(w, "  connections         %9d   (opened to the receiver in the run, warm-up included: kept alive, about the sends in flight at once)\n", r.Conns)
	if r.Clients > 0 {
		printIngestLoad(w, r.Ingest)
		printCores(w, r.cpu)
	} else {
		printDispatchCPU(w, "send", "server", "bench (enqueue, receiver)", r.cpu, int64(r.Sends))
	}
	if r.ReferencePerSec > 0 {
		fmt.Fprintf(w, "reference: River no-op jobs, same count, enqueued the same way, FetchCooldown 10ms, %d workers, %s\n",
			workers.DispatchMaxWorkersDefault, load)
		fmt.Fprintf(w, "  jobs/s             %10.0f   (%s)\n", r.ReferencePerSec, r.ReferenceElapsed.Round(time.Millisecond))
		if r.Clients > 0 {
			printIngestLoad(w, r.RefIngest)
		}
		fmt.Fprintf(w, "  ratio mio/river    %10.2f\n", r.PerSec/r.ReferencePerSec)
	}
}

// printIngestLoad writes the webhook clients' figures of a phase.
func printIngestLoad(w io.Writer, f loadFigures) {
	fmt.Fprintf(w, "  webhooks accepted/s %9.0f   (%d accepted, %d failed; p50 %s, p99 %s)\n",
		f.perSec, f.ok, f.failed, f.p50.Round(10*time.Microsecond), f.p99.Round(10*time.Microsecond))
}

// printCores writes where the machine's CPU went in a phase shared by
// sends and webhooks, in cores.
func printCores(w io.Writer, u cpuUse) {
	total := u.busy + u.idle
	if !u.ok || total <= 0 {
		return
	}
	// /proc/stat's busy and idle add up over every core.
	cores := func(d time.Duration) float64 { return float64(d) / float64(total) * float64(runtime.NumCPU()) }
	fmt.Fprintf(w, "  CPU, cores         server %.2f, bench (enqueue, receiver, clients) %.2f, postgres and the rest %.2f; %.0f%% idle\n",
		cores(u.server), cores(u.loader), cores(u.rest()), 100*float64(u.idle)/float64(total))
}
