package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/miohq/mio/config"

	"github.com/miohq/mio/cmd/mio-bench/bench"
)

// runBench runs the benchmark args[0] with the flags after it.
func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	which := args[0]
	var (
		clients  int
		duration time.Duration
		warmup   time.Duration
		noRef    bool
		rate     int
		hold     time.Duration
		holdKind string
		ordering string
		messages int
		arrivals string
		replies  int
		sdkDir   string
		cpuProf  string
		memProf  string
		rows     int
		days     int
		lanes    int
		perLane  int
		pullers  int
		loader   string
		limited  bool
		server   string
		adminCs  int
		requests int
		sends    int
		sampler  string
		streams  int
		sRate    int
		sFor     time.Duration
		latFile  string
	)
	cfg, rest, err := config.LoadWith("mio-bench "+which, args[1:], getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&server, "mio", "", "the mio binary run as the server (default: mio beside this program, else mio on PATH)")
		fs.IntVar(&clients, "clients", 32, "concurrent clients (mcp: default 8; dispatch-webhook: clients posting webhooks during the dispatch, default none)")
		fs.IntVar(&sends, "sends", 20_000, "dispatch-webhook: sends queued")
		fs.IntVar(&streams, "streams", 200, "stream: streamed replies open at once")
		fs.IntVar(&sRate, "stream-rate", 10, "stream: appends per second of each stream")
		fs.DurationVar(&sFor, "stream-for", 30*time.Second, "stream: how long each stream appends")
		fs.StringVar(&latFile, "latencies", "", "stream: write every append to this file, one a line: its start (µs since the streams started), its latency (ms) and its conversation")
		fs.DurationVar(&duration, "duration", 10*time.Second, "measured duration")
		fs.IntVar(&pullers, "pullers", 8, "consume: concurrent pullers of the drain (the pgbench reference runs as many clients)")
		fs.DurationVar(&warmup, "warmup", 2*time.Second, "warm-up before measuring")
		fs.BoolVar(&noRef, "no-reference", false, "skip the reference (pgbench; dispatch, dispatch-webhook: River's no-op jobs)")
		fs.IntVar(&rate, "rate", 200, "horizon: webhooks per second offered; dispatch: sends per second of the latency phase (default half the throughput; the reply phase POSTs at 20/s)")
		fs.DurationVar(&hold, "hold", 2*time.Minute, "horizon: how long the transaction(s) stay open")
		fs.IntVar(&messages, "messages", 0, "sdk: messages each consume loop drains (default 20000); mcp: messages each drain reads (default 20000); bridge: messages preloaded (default 100000); admin: inbox rows seeded (default 1000000); scale: messages pulled+acked per phase (default 400000); dispatch: sends of the throughput phase (default 50000)")
		fs.IntVar(&adminCs, "consumers", 0, "admin: consumers created, each --messages behind (default 100)")
		fs.IntVar(&requests, "requests", 0, "admin: queries of mio.queue_health and requests per admin call (default 200)")
		fs.IntVar(&replies, "replies", 0, "sdk: answers per variant, reply-with-ack and send+ack (default 2000); mcp: pull→reply round trips timed (default 200)")
		fs.StringVar(&sdkDir, "sdk-dir", ".", "sdk: the repository root holding sdk/python and sdk/typescript (built)")
		fs.StringVar(&holdKind, "hold-kind", bench.HoldWriter, "horizon: writer (one transaction with an XID) or readers (four REPEATABLE READ snapshots)")
		fs.StringVar(&loader, "loader", bench.LoaderRaw, "ingest, produce, dispatch-webhook: the load generator: raw (one write a request on kept-alive connections, a few µs of CPU a request, like pgbench's client) or go (net/http's client, ~45 µs a request)")
		fs.StringVar(&cpuProf, "cpuprofile", "", "ingest, produce, consume, dispatch, dispatch-webhook, mcp, stream: write the server's CPU profile of the measured phase (consume: the drain's first 5 s; mcp: the MCP drain's first 3 s, the HTTP drain's to <file>.http, the bench's own clients' to <file>.client and <file>.http.client; dispatch: the throughput phase's first 5 s; stream: the appends' middle half) to this file; bridge: this process's (bridge and nats-server) while the bridge publishes")
		fs.StringVar(&memProf, "allocsprofile", "", "ingest, dispatch, dispatch-webhook, stream: write the server's allocation profile after the measured phase (dispatch: the throughput phase; stream: the appends) to this file")
		fs.StringVar(&ordering, "ordering", "none", "horizon: the consumer's ordering, none or conversation")
		fs.IntVar(&rows, "rows", 10_000_000, "scale: inbox rows loaded as history")
		fs.IntVar(&days, "days", 5, "scale: past days the history spreads over (at most 6)")
		fs.IntVar(&lanes, "lanes", 0, "dispatch: measure ordered lanes instead (this many conversations; e.g. 1 or 64); dispatch-webhook: spread the sends over this many conversations (default one a send); produce: -1 skips the lane phases")
		fs.IntVar(&perLane, "per-lane", 200, "dispatch --lanes: sends queued per conversation")
		fs.BoolVar(&limited, "rate-limited", false, "dispatch: give the account a rate limit too high to hold a send back (1e6/s), so that every claim takes the rate-limited path of the platforms that have limits")
		fs.StringVar(&sampler, "otel-sampler", "", "trace the server: off, always_on or parentbased_traceidratio:<ratio> (spans go to a sink in this process, which counts them); default: the server inherits OTEL_* from this environment")
		fs.StringVar(&arrivals, "arrivals", "steady", "dispatch: the reply phase's sends (20/s) evenly spaced (steady) or at random (poisson)")
	})
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err.Error()}
	}
	if len(rest) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	if loader != bench.LoaderRaw && loader != bench.LoaderGo {
		return &usageError{fmt.Sprintf("--loader %q: want raw or go", loader)}
	}
	switch {
	case which == "stream" && (streams < 1 || sRate < 1 || sFor <= 0):
		return &usageError{fmt.Sprintf("--streams %d --stream-rate %d --stream-for %s: want each above 0", streams, sRate, sFor)}
	case which == "consume" && (pullers < 1 || pullers > 256):
		return &usageError{fmt.Sprintf("--pullers %d: want 1 to 256", pullers)}
	case which == "dispatch-webhook" && sends < 1:
		return &usageError{fmt.Sprintf("--sends %d: want at least 1", sends)}
	case which == "dispatch-webhook" && lanes < 0:
		return &usageError{fmt.Sprintf("--lanes %d: want 0 (one conversation a send) or more", lanes)}
	case which == "dispatch-webhook" && clients < 0:
		return &usageError{fmt.Sprintf("--clients %d: want 0 or more", clients)}
	case which == "dispatch" && arrivals != "steady" && arrivals != "poisson":
		return &usageError{fmt.Sprintf("--arrivals %q: want steady or poisson", arrivals)}
	case which == "horizon" && holdKind != bench.HoldWriter && holdKind != bench.HoldReaders:
		return &usageError{fmt.Sprintf("--hold-kind %q: want writer or readers", holdKind)}
	case which == "horizon" && ordering != "none" && ordering != "conversation":
		return &usageError{fmt.Sprintf("--ordering %q: want none or conversation", ordering)}
	case which == "scale" && (rows <= 0 || days <= 0 || days > 6):
		return &usageError{fmt.Sprintf("--rows %d --days %d: want rows > 0 and days from 1 to 6", rows, days)}
	}
	self, err := serverBinary(server)
	if err != nil {
		return err
	}
	var traceEnv []string
	if sampler != "" {
		sink := bench.StartOTLPSink()
		defer func() {
			exports, spans := sink.Received()
			fmt.Fprintf(stdout, "tracing: --otel-sampler %s; the sink received %d spans in %d exports\n", sampler, spans, exports)
			sink.Close()
		}()
		if traceEnv, err = bench.TracingEnv(sampler, sink.URL()); err != nil {
			return &usageError{err.Error()}
		}
	}
	// start starts a bench server (the mio binary) on its own database, with
	// the settings given as flags and serverEnv on top.
	start := func(serverEnv ...string) (*bench.Env, error) {
		return bench.Start(ctx, bench.EnvOptions{DatabaseURL: cfg.DatabaseURL, ServerFlags: cfg.FromFlags, Binary: self, Out: stdout,
			ServerEnv: append(serverEnv, traceEnv...)})
	}
	switch which {
	case "ingest":
		env, err := start()
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.Ingest(ctx, env, bench.IngestOptions{Clients: clients, Duration: duration, Warmup: warmup, SkipPgbench: noRef, Loader: loader, CPUProfile: cpuProf, AllocsProfile: memProf})
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "produce":
		// The server only accepts (role api): dispatch does not compete.
		env, err := start("MIO_ROLE=api", "MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.Produce(ctx, env, bench.ProduceOptions{Clients: clients, Duration: duration, Warmup: warmup, SkipPgbench: noRef, Loader: loader, CPUProfile: cpuProf})
		if res != nil {
			res.Print(stdout)
		}
		env.Close()
		if err != nil || lanes < 0 {
			return err
		}
		// Ordered lanes need workers: a server of role all on a database of
		// its own, one lane of 300, then 64 lanes of 200.
		for _, l := range [][2]int{{1, 300}, {64, 200}} {
			lenv, err := start("MIO_ARCHIVE_INTERVAL=1h")
			if err != nil {
				return err
			}
			lres, err := bench.RunLanes(ctx, lenv, l[0], l[1], false)
			lenv.Close()
			if lres != nil {
				lres.Print(stdout)
			}
			if err != nil {
				return err
			}
		}
		return nil
	case "admin":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.Admin(ctx, env, bench.AdminOptions{Messages: messages, Consumers: adminCs, Requests: requests})
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "consume":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.Consume(ctx, env, bench.ConsumeOptions{Pullers: pullers, SkipPgbench: noRef, E2EDuration: duration, CPUProfile: cpuProf})
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "dispatch":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		if lanes > 0 {
			res, err := bench.RunLanes(ctx, env, lanes, perLane, limited)
			if res != nil {
				res.Print(stdout)
			}
			return err
		}
		steady := 0
		if flagSet(args[1:], "rate") {
			steady = rate // the latency phase at this rate (default: half the throughput)
		}
		res, err := bench.Dispatch(ctx, env, bench.DispatchOptions{SkipReference: noRef, SteadyDuration: duration, SteadyRate: steady,
			Messages: messages, ReplyPoisson: arrivals == "poisson", CPUProfile: cpuProf, AllocsProfile: memProf, RateLimited: limited})
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "dispatch-webhook":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.DispatchWebhook(ctx, env, dispatchWebhookOptions(args[1:], clients, sends, lanes, loader, noRef, warmup, cpuProf, memProf))
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "stream":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.Stream(ctx, env, bench.StreamOptions{Streams: streams, Rate: sRate, Duration: sFor, CPUProfile: cpuProf, AllocsProfile: memProf, Latencies: latFile})
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "horizon":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.Horizon(ctx, env, bench.HorizonOptions{Rate: rate, Hold: hold, Kind: holdKind, Clean: duration, Ordering: ordering})
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "sdk":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.SDK(ctx, env, bench.SDKOptions{Messages: messages, Replies: replies, SDKDir: sdkDir})
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "mcp":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		opts := bench.MCPOptions{Messages: messages, Replies: replies, CPUProfile: cpuProf}
		if flagSet(args[1:], "clients") {
			opts.Clients = clients
		}
		res, err := bench.MCP(ctx, env, opts)
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "bridge":
		// The server runs no bridge of its own: the benchmark's is the only one.
		env, err := start("MIO_ARCHIVE_INTERVAL=1h", "MIO_NATS_URL=")
		if err != nil {
			return err
		}
		defer env.Close()
		if messages == 0 {
			messages = 100_000
		}
		res, err := bench.Bridge(ctx, env, bench.BridgeOptions{Preload: messages, NatsURL: cfg.NatsURL, SkipReference: noRef, E2EDuration: duration, CPUProfile: cpuProf})
		if res != nil {
			res.Print(stdout)
		}
		return err
	case "scale":
		env, err := start("MIO_ARCHIVE_INTERVAL=1h")
		if err != nil {
			return err
		}
		defer env.Close()
		res, err := bench.Scale(ctx, env, bench.ScaleOptions{Rows: rows, Days: days, Clients: clients, Duration: duration,
			Warmup: warmup, Drain: messages})
		if res != nil {
			res.Print(stdout)
		}
		return err
	default:
		return &usageError{fmt.Sprintf("unknown benchmark %q: want %s", which, strings.Join(benchmarks, ", "))}
	}
}

// dispatchWebhookOptions are dispatch-webhook's options from its flags:
// webhooks post during the dispatch only when --clients is given.
func dispatchWebhookOptions(args []string, clients, sends, lanes int, loader string, noRef bool, warmup time.Duration, cpuProf, memProf string) bench.DispatchWebhookOptions {
	if !flagSet(args, "clients") {
		clients = 0
	}
	return bench.DispatchWebhookOptions{Sends: sends, Lanes: lanes, Clients: clients, Loader: loader, SkipReference: noRef, Warmup: warmup,
		CPUProfile: cpuProf, AllocsProfile: memProf}
}

// flagSet reports whether args name the flag (-name, --name, with or
// without =value).
func flagSet(args []string, name string) bool {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// serverBinary finds the mio binary the benchmarks run as their server:
// the --mio flag, else mio beside this program (make bench builds both
// into bin/), else mio on PATH.
func serverBinary(flagValue string) (string, error) {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err != nil {
			return "", &usageError{fmt.Sprintf("--mio %s: %v", flagValue, err)}
		}
		return flagValue, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "mio")
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("mio"); err == nil {
		return p, nil
	}
	return "", errors.New("no mio binary to run as the server: build it (make build) or pass --mio PATH")
}
