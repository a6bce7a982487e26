package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/miohq/mio/bridge"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
)

// BridgeOptions configure the bridge benchmark.
type BridgeOptions struct {
	Preload int // ready messages preloaded; default 100k
	// NatsURL targets an existing nats-server; empty starts one in this
	// process (JetStream, file store in a temp dir).
	NatsURL       string
	SkipReference bool
	// E2ERate and E2EDuration drive the latency phase: webhooks per
	// second (default 500) for this long (default 10s; negative skips it).
	E2ERate     int
	E2EDuration time.Duration
	// CPUProfile, when set, is where this process's CPU profile (the
	// bridge and an in-process nats-server) of the publish phase goes.
	CPUProfile string
}

// BridgeResult holds the figures of one run.
type BridgeResult struct {
	Messages        int // preloaded messages (each is two events: inbound, inbound_enriched)
	Events          int
	Elapsed         time.Duration
	EventsPerSec    float64
	ReferenceEvents int
	ReferenceTime   time.Duration
	ReferencePerSec float64
	MaxPending      int
	E2ESent         int
	E2ECount        int
	E2EP50, E2EP99  time.Duration
}

// Print writes the figures.
func (r *BridgeResult) Print(w io.Writer) {
	fmt.Fprintf(w, "bridge: %d messages (%d events) published into JetStream in %s: %.0f events/s (%.0f messages/s), pending-ack window %d\n",
		r.Messages, r.Events, r.Elapsed.Round(time.Millisecond), r.EventsPerSec, r.EventsPerSec/2, r.MaxPending)
	if r.ReferencePerSec > 0 {
		fmt.Fprintf(w, "reference: the same %d payloads published straight to the same nats-server, async, same window: %.0f events/s in %s\n",
			r.ReferenceEvents, r.ReferencePerSec, r.ReferenceTime.Round(time.Millisecond))
		fmt.Fprintf(w, "ratio: %.2f x reference (target >= 0.50; >= 10,000 messages/s)\n", r.EventsPerSec/r.ReferencePerSec)
	}
	if r.E2ESent > 0 {
		fmt.Fprintf(w, "end to end (webhook answered 200 -> event received from NATS, bridge woken by LISTEN/NOTIFY): %d sent, %d measured\n", r.E2ESent, r.E2ECount)
		fmt.Fprintf(w, "  e2e p50 %s, p99 %s (target p99 <= 50ms at 500 msg/s)\n", r.E2EP50.Round(10*time.Microsecond), r.E2EP99.Round(10*time.Microsecond))
	}
}

// Bridge preloads ready messages, runs a bridge in this process until
// the stream holds every event (inbound and inbound_enriched per
// message), then publishes the same payloads straight to the same
// nats-server with the same pending-ack window (no PostgreSQL).
func Bridge(ctx context.Context, env *Env, opts BridgeOptions) (*BridgeResult, error) {
	if opts.Preload == 0 {
		opts.Preload = 100_000
	}
	if opts.E2ERate == 0 {
		opts.E2ERate = 500
	}
	if opts.E2EDuration == 0 {
		opts.E2EDuration = 10 * time.Second
	}
	url := opts.NatsURL
	if url == "" {
		stop, u, err := startNATS()
		if err != nil {
			return nil, err
		}
		defer stop()
		url = u
	}
	cs := &consumerSetup{}
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 8, RuntimeRole: "mio_runtime", StatementTimeout: -1})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	cs.pool, cs.secret = pool, "whsec_"+strings.Repeat("QUJD", 8)
	if err := cs.init(ctx, env, "bench-bridge"); err != nil {
		return nil, err
	}
	if err := preloadReady(ctx, env, cs, opts.Preload); err != nil {
		return nil, err
	}
	nc, err := bridge.Connect(bridge.ConnectOptions{URL: url, Name: "mio-bench"})
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	const stream = "MIO_BENCH"
	res := &BridgeResult{Messages: opts.Preload, Events: 2 * opts.Preload, MaxPending: bridge.DefaultMaxPending}
	br, err := bridge.New(pool, nc, bridge.Config{Stream: stream, Metrics: metrics.NewBridge(nil)})
	if err != nil {
		return nil, err
	}
	if err := br.CheckStream(ctx); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(res.MaxPending))
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(ctx)
	stopProfile, err := startCPUProfile(opts.CPUProfile)
	if err != nil {
		cancel()
		return nil, err
	}
	start := time.Now()
	go br.Run(bctx)
	if err = waitStream(ctx, js, stream, uint64(res.Events)); err != nil {
		err = fmt.Errorf("wait for the bridge: %w", err)
	}
	res.Elapsed = time.Since(start)
	cancel()
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return res, err
	}
	res.EventsPerSec = float64(res.Events) / res.Elapsed.Seconds()
	if !opts.SkipReference {
		if err := reference(ctx, js, stream, res); err != nil {
			return res, fmt.Errorf("reference: %w", err)
		}
	}
	if opts.E2EDuration >= 0 {
		return res, bridgeE2E(ctx, env, cs, nc, stream, opts, res)
	}
	return res, nil
}

// reference reads the bridge's stream back and publishes the same
// subjects (under ref.), headers and payloads to another stream.
func reference(ctx context.Context, js jetstream.JetStream, from string, res *BridgeResult) error {
	src, err := js.Stream(ctx, from)
	if err != nil {
		return err
	}
	msgs := make([]*nats.Msg, 0, res.Events)
	for seq := uint64(1); seq <= uint64(res.Events); seq++ {
		m, err := src.GetMsg(ctx, seq)
		if err != nil {
			return fmt.Errorf("reference: read %d: %w", seq, err)
		}
		h := nats.Header{}
		for _, k := range []string{jetstream.MsgIDHeader, bridge.HeaderTenantID, bridge.HeaderChannelType, bridge.HeaderEvent} {
			h.Set(k, m.Header.Get(k))
		}
		msgs = append(msgs, &nats.Msg{Subject: "ref." + m.Subject, Header: h, Data: m.Data})
	}
	const ref = "MIO_BENCH_REF"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: ref, Subjects: []string{"ref.>"},
		Storage: jetstream.FileStorage, Duplicates: bridge.DefaultDuplicateWindow}); err != nil {
		return err
	}
	start := time.Now()
	for _, m := range msgs {
		for {
			_, err := js.PublishMsgAsync(m, jetstream.WithExpectStream(ref)) // as the bridge does
			if err == nil {
				break
			}
			if err != jetstream.ErrTooManyStalledMsgs {
				return fmt.Errorf("reference: publish: %w", err)
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	res.ReferenceTime = time.Since(start)
	res.ReferenceEvents = len(msgs)
	res.ReferencePerSec = float64(len(msgs)) / res.ReferenceTime.Seconds()
	return waitStream(ctx, js, ref, uint64(len(msgs)))
}

// waitStream waits until the stream holds want messages.
func waitStream(ctx context.Context, js jetstream.JetStream, name string, want uint64) error {
	for ctx.Err() == nil {
		s, err := js.Stream(ctx, name)
		if err == nil {
			info, err := s.Info(ctx)
			if err == nil && info.State.Msgs >= want {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ctx.Err()
}

// preloadReady inserts n ready messages of the setup's account
// (insertReady) without moving the archive's position.
func preloadReady(ctx context.Context, env *Env, cs *consumerSetup, n int) error {
	return insertReady(ctx, env, cs.tenant.ID, cs.account.ID, n)
}

// startNATS runs a JetStream nats-server in this process on a free port.
func startNATS() (stop func(), url string, err error) {
	dir, err := os.MkdirTemp("", "mio-bench-nats-")
	if err != nil {
		return nil, "", err
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, "", err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		return nil, "", fmt.Errorf("nats-server did not start")
	}
	return func() {
		s.Shutdown()
		s.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}, fmt.Sprintf("nats://127.0.0.1:%d", s.Addr().(*net.TCPAddr).Port), nil
}

// bridgeE2E sends webhooks to the server at a steady rate while a bridge
// in this process, woken by the server's NOTIFY, publishes them; a core
// NATS subscriber on mio.inbound.> timestamps their arrival.
func bridgeE2E(ctx context.Context, env *Env, cs *consumerSetup, nc *nats.Conn, stream string, opts BridgeOptions, res *BridgeResult) error {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hub := notify.New(cs.pool, nil, notify.Options{})
	go hub.Run(hctx)
	br, err := bridge.New(cs.pool, nc, bridge.Config{Stream: stream, Hub: hub, Metrics: metrics.NewBridge(nil)})
	if err != nil {
		return err
	}
	go br.Run(hctx)
	var (
		mu          sync.Mutex
		acked, recv = map[string]time.Time{}, map[string]time.Time{}
	)
	sub, err := nc.Subscribe(bridge.SubjectInbound+".>", func(m *nats.Msg) {
		now := time.Now()
		var msg struct {
			SourceMessageID string `json:"source_message_id"`
		}
		if json.Unmarshal(m.Data, &msg) == nil {
			mu.Lock()
			recv[msg.SourceMessageID] = now
			mu.Unlock()
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe() //nolint:errcheck
	url := env.BaseURL + "/webhooks/webhook/" + cs.account.ID.String()
	res.E2ESent = webhookLoad(url, cs.secret, opts.E2ERate, opts.E2EDuration, func(id string) {
		mu.Lock()
		acked[id] = time.Now()
		mu.Unlock()
	})
	for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(recv)
		mu.Unlock()
		if n >= res.E2ESent {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var lats []time.Duration
	for id, at := range acked {
		if got, ok := recv[id]; ok {
			lats = append(lats, max(0, got.Sub(at))) // the event may arrive before the webhook's answer
		}
	}
	SortDurations(lats)
	res.E2ECount = len(lats)
	res.E2EP50, res.E2EP99 = Percentile(lats, 50), Percentile(lats, 99)
	return nil
}

// startCPUProfile profiles this process into path until the returned
// function is called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
