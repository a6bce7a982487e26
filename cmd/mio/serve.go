package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/bridge"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/config"
	"github.com/miohq/mio/console"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/install"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/migrations"
	"github.com/miohq/mio/notify"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/reply"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/sources"
	"github.com/miohq/mio/tracing"
	"github.com/miohq/mio/workers"
)

func cmdServe(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	cfg, rest, err := loadConfig("serve", args, getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	if cfg.DatabaseURL == "" {
		return &usageError{"MIO_DATABASE_URL (or DATABASE_URL) is required for mio serve; mio dev starts a private database"}
	}
	if cfg.Role == "bridge" && cfg.NatsURL == "" {
		return &usageError{"MIO_NATS_URL is required for mio serve --role bridge"}
	}
	log := newLogger(stderr, cfg.LogLevel)
	rt := config.TuneRuntime(getenv, os.ReadFile)
	tp, stopTracing, err := startTracing(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	return serve(ctx, cfg, log, &rt, tp, nil)
}

// startTracing sets tracing up from the OTEL_* variables (package
// tracing); stop flushes the spans not yet exported, within 5 s.
func startTracing(ctx context.Context, getenv env, log *slog.Logger) (trace.TracerProvider, func(), error) {
	tp, shutdown, err := tracing.Setup(ctx, log, getenv)
	if err != nil {
		return nil, nil, &usageError{err.Error()}
	}
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("tracing: spans not flushed", "err", err)
		}
	}, nil
}

// outboxSpan describes the commit spans of sends and replies: messages
// queued in the outbox.
var outboxSpan = []attribute.KeyValue{attribute.String("messaging.system", tracing.System),
	attribute.String("messaging.operation.type", "send"), attribute.String("messaging.destination.name", "outbox"),
	attribute.String("db.system.name", "postgresql")}

// listening is called once both listeners are bound.
type listening func(publicAddr, adminAddr string)

// serve runs the process until ctx is done, then shuts down gracefully
// within cfg.ShutdownTimeout: stop accepting, drain in-flight requests,
// stop River. rt, when not nil, is how the command tuned the Go runtime
// (config.TuneRuntime): logged once the schema check has passed, so that a
// refusal stays the one line it is. tp, when not nil, traces the process (tracing.Setup).
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, rt *config.Runtime, tp trace.TracerProvider, onListen listening) error {
	// Teams conversations' service URLs are kept in the database; the
	// store gets its pool once the pool is open, before any request.
	teamsURLs := &accounts.TeamsServiceURLs{Logger: log.With("component", "teams")}
	registry := builtin.Registry(builtin.Options{HTTPClient: platformClient(), Logger: log.With("component", "channels"),
		APIBasePolicy: apiBasePolicy(cfg), TeamsServiceURLs: teamsURLs})
	if err := checkChannelSettings(cfg, registry); err != nil {
		return err
	}
	owner, err := db.Open(ctx, cfg.DatabaseURL, db.PoolOptions{MaxConns: 2, ApplicationName: "mio-schema"})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer owner.Close()
	migrator := migrations.New(owner).WithChannelTypes(channelTypes(registry))
	registered, err := migrator.RegisterChannelTypes(ctx)
	if err != nil {
		return err
	}
	for _, r := range registered {
		log.Info("channel type " + r.Name)
	}
	schema := newSchemaChecker(migrator)
	if err := schema.Check(ctx); err != nil {
		if errors.Is(err, migrations.ErrSchemaOutOfDate) {
			return err
		}
		return fmt.Errorf("check schema: %w", err)
	}
	if rt != nil {
		log.Info("go runtime: " + rt.String())
	}

	pool, err := db.Open(ctx, cfg.DatabaseURL, db.PoolOptions{MaxConns: cfg.DBMaxConns, RuntimeRole: cfg.DBRuntimeRole})
	if err != nil {
		return fmt.Errorf("database (runtime role %s): %w", cfg.DBRuntimeRole, err)
	}
	defer pool.Close()

	m := metrics.New()
	var box *secretbox.Box
	if cfg.MasterKey != nil {
		if box, err = secretbox.New(cfg.MasterKey); err != nil {
			return err
		}
	}
	teamsURLs.Pool = pool
	// One account cache for webhooks, dispatch and attachment fetches.
	accts := accounts.NewResolver(pool, accounts.ResolverConfig{Box: box, Registry: registry,
		Metrics: metrics.NewCredentials(m.Registry), Logger: log.With("component", "accounts")})
	store, err := openBlob(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeBlob(store, log)
	set := workers.NewSet()
	set.AddDedupPrune(pool, cfg.DedupRetention, time.Hour)
	set.AddInboxPartitions(&workers.InboxPartitionsWorker{Pool: pool, Logger: log.With("component", "inbox_partitions")}, time.Hour)
	set.AddConsumerRing(pool, time.Minute, log.With("component", "consumer_ring"))
	addMediaWorkers(set, cfg, pool, store, registry, accts, metrics.NewMedia(m.Registry), log, tp)
	// Outbound: dispatch, delivery receipts (the outbox sweeper runs
	// beside River, below).
	outMetrics := metrics.NewOutbound(m.Registry)
	dispatcher := set.AddDispatch(pool, workers.DispatchConfig{Accounts: accts, Metrics: outMetrics,
		Logger: log.With("component", "dispatch"), TracerProvider: tp, SendTimeout: cfg.SendTimeout,
		StreamTimeout: cfg.StreamTimeout})
	set.AddReceipts(pool, workers.ReceiptsConfig{Metrics: outMetrics})
	reconciler := set.AddReconcile(pool, accts, registry, workers.ReconcileConfig{Interval: cfg.ReconcileInterval,
		ActiveWithin: cfg.ReconcileWindow, Metrics: metrics.NewReconcile(m.Registry), Logger: log.With("component", "reconcile")})
	// Behind a transaction pooler (MIO_DATABASE_LISTEN_URL set) River polls.
	wcfg := workers.Config{Logger: log.With("component", "river"), Work: cfg.Role == "all" || cfg.Role == "worker",
		PollOnly: cfg.DatabaseListenURL != "", TracerProvider: tp}
	riverClient, err := workers.NewClient(pool, set, wcfg)
	if err != nil {
		return fmt.Errorf("river: %w", err)
	}

	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	hub := notify.New(pool, log.With("component", "notify"), notify.Options{ListenURL: cfg.DatabaseListenURL})
	go hub.Run(bg)
	ingester := ingest.New(pool, ingest.Config{
		Flushers:      cfg.IngestFlushers,
		BurstFlushers: noneIfZero(cfg.IngestBurstFlushers),
		Window:        cfg.IngestWindow,
		River:         riverClient,
		OnCommit:      hub.Publish,
		OnBatch: func(n int, took time.Duration) {
			m.IngestBatchSize.Observe(float64(n))
			m.IngestCommitSeconds.Observe(took.Seconds())
		},
		Logger: log.With("component", "ingest"),
		Tracer: tracing.Tracer(tp),
	})
	ingester.Start()
	// Sends of concurrent requests share transactions (group commit).
	sender := outbox.New(pool, riverClient)
	stopSender := sender.StartGroupCommit(groupcommit.Config{Flushers: cfg.OutboundFlushers, BurstFlushers: cfg.OutboundBurstFlushers, Window: cfg.OutboundWindow,
		OnBatch: func(n int, took time.Duration) {
			m.OutboundBatchSize.Observe(float64(n))
			m.OutboundCommitSeconds.Observe(took.Seconds())
		}, Logger: log.With("component", "outbound"), Tracer: tracing.Tracer(tp), SpanAttributes: outboxSpan})
	// Appends to streamed replies too (same settings).
	stopAppends := sender.StartAppendGroupCommit(groupcommit.Config{Flushers: cfg.OutboundFlushers, BurstFlushers: cfg.OutboundBurstFlushers, Window: cfg.OutboundWindow,
		OnBatch: func(n int, took time.Duration) {
			m.AppendBatchSize.Observe(float64(n))
			m.AppendCommitSeconds.Observe(took.Seconds())
		}, Logger: log.With("component", "append"), Tracer: tracing.Tracer(tp), SpanAttributes: outboxSpan})
	reconciler.Ingester = ingester // before River starts

	// The channels' long-running sources (the Discord Gateway, Telegram
	// long polling) run where workers run, each account held by one
	// process at a time (leases in the database).
	sourcesDone := make(chan struct{})
	srcCtx, stopSources := context.WithCancel(context.Background())
	defer stopSources()
	if cfg.Role == "all" || cfg.Role == "worker" {
		go func() {
			defer close(sourcesDone)
			err := sources.Run(srcCtx, sources.Config{Pool: pool, Registry: registry, Accounts: accts, Ingester: ingester,
				Metrics: m, Registerer: m.Registry, Logger: log.With("component", "sources"), TracerProvider: tp,
				CatchUp: func(tenantID, accountID uuid.UUID) {
					// Catch up what a lost session did not replay.
					args := workers.ReconcileArgs{TenantID: tenantID, AccountID: accountID}
					if _, err := riverClient.Insert(srcCtx, args, nil); err != nil {
						log.Warn("enqueue catch-up after a lost source session", "account_id", accountID, "err", err)
					}
				}})
			if err != nil {
				log.Error("sources stopped", "err", err)
			}
		}()
	} else {
		close(sourcesDone)
	}

	var bridgeReady func() error
	if cfg.NatsURL != "" && (cfg.Role == "all" || cfg.Role == "bridge") {
		br, closeNATS, err := startBridge(ctx, cfg, pool, hub, metrics.NewBridge(m.Registry), log.With("component", "bridge"))
		if err != nil {
			return err
		}
		defer closeNATS()
		go br.Run(bg)
		go func() {
			if err := br.ServeCommands(bg, sender); err != nil {
				log.Error("nats: outbound commands not served", "err", err)
			}
		}()
		if cfg.Role == "bridge" {
			bridgeReady = br.Ready
		}
	}

	consumers := consume.New(pool, hub, m, log.With("component", "consume"), consume.Options{})
	// Replies with ack share transactions like sends (same settings).
	replies := reply.New(pool, consumers, sender)
	stopReplies := replies.StartGroupCommit(groupcommit.Config{Flushers: cfg.OutboundFlushers, BurstFlushers: cfg.OutboundBurstFlushers, Window: cfg.OutboundWindow,
		Logger: log.With("component", "reply"), Tracer: tracing.Tracer(tp), SpanAttributes: outboxSpan})
	defer stopReplies() // after a failed start; harmless after shutdown
	go consumers.RunGauges(bg, 15*time.Second)
	if cfg.Role == "all" || cfg.Role == "worker" {
		go consumers.RunCountsFold(bg, 2*time.Second)
	}
	go admin.RunQueueGauges(bg, pool, metrics.NewQueue(m.Registry), log.With("component", "queue-health"), 15*time.Second)

	adminSvc := admin.New(pool, box, cfg.PublicURL).WithRegistry(registry)
	var installs *install.Service
	if box != nil {
		installs = install.New(pool, install.Config{Box: box, Registry: registry, PublicURL: cfg.PublicURL})
	}
	con, err := console.New(console.Deps{Pool: pool, Admin: adminSvc, Registry: registry, Hub: hub, ForgetAccount: accts.Forget,
		Installs: installs, Logger: log.With("component", "console")})
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	api := httpapi.New(httpapi.Deps{
		Pool: pool, Metrics: m, Logger: log, SchemaCheck: schema.Check, BridgeReady: bridgeReady,
		Registry: registry, Accounts: accts, Ingester: ingester,
		Outbox: sender, Hub: hub, Consumers: consumers, Replies: replies,
		WebhookDeadline: cfg.WebhookDeadline, WebhookMaxBody: cfg.WebhookMaxBody,
		Blob: store, AttachmentURLTTL: cfg.AttachmentURLTTL,
		Admin:           adminSvc,
		AdminAllowCIDRs: cfg.AdminAllowCIDRs, Pprof: cfg.Pprof, Console: con.Handler(),
		MCPAllowedOrigins: cfg.MCPAllowedOrigins, Version: version, Installs: installs,
		TracerProvider: tp,
	})

	servers := newListeners(2, log)
	defer servers.close() // after a failed start; harmless after shutdown
	var publicAddr, adminAddr string
	if cfg.Role == "all" || cfg.Role == "api" {
		if publicAddr, err = servers.listen("public", cfg.HTTPAddr, api.PublicHandler()); err != nil {
			return err
		}
	}
	if adminAddr, err = servers.listen("admin", cfg.AdminAddr, api.AdminHandler()); err != nil {
		return err
	}

	working := workers.Works(set, wcfg)
	// Every worker process sweeps the outbox (orphaned and requeued rows),
	// one at a time under the sweeper's lock.
	sweepDone := make(chan struct{})
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	defer stopSweep()
	if working {
		if err := riverClient.Start(ctx); err != nil {
			return fmt.Errorf("start river: %w", err)
		}
		sweeper := workers.NewOutboxSweeper(pool, riverClient, workers.OutboxSweepConfig{
			StuckAfter: dispatcher.JobTimeout() + time.Minute, Logger: log.With("component", "outbox_sweeper")})
		go func() {
			defer close(sweepDone)
			sweeper.Run(sweepCtx)
		}()
	} else {
		close(sweepDone)
	}
	log.Info("mio serving", "public_addr", publicAddr, "admin_addr", adminAddr, "role", cfg.Role, "workers", set.Len())
	if onListen != nil {
		onListen(publicAddr, adminAddr)
	}

	// A listener that stops serving stops the process: half a server must
	// not keep running (and answering /readyz on the other listener).
	var failed error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	case failed = <-servers.errs:
		log.Info("shutting down after a listener failed", "timeout", cfg.ShutdownTimeout.String())
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	servers.shutdown(sctx, log)
	stopSources()
	<-sourcesDone // their sessions commit through the ingester
	ingester.Stop()
	stopReplies()
	stopSender()
	stopAppends()
	stopSweep()
	<-sweepDone // its pass enqueues through River's client
	if working {
		if err := riverClient.Stop(sctx); err != nil {
			log.Warn("river did not stop gracefully; cancelling jobs", "err", err)
			cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = riverClient.StopAndCancel(cctx)
			ccancel()
		}
	}
	dispatcher.Stop() // after River: no job claims or finishes any more
	log.Info("stopped")
	return failed
}

// listeners are the process's HTTP servers. A server that stops serving
// for any reason but shutdown reports the reason on errs.
type listeners struct {
	servers []*http.Server
	errs    chan error
	log     *slog.Logger
}

// newListeners makes room for up to n servers, so that a failing server
// never blocks on errs.
func newListeners(n int, log *slog.Logger) *listeners {
	return &listeners{errs: make(chan error, n), log: log}
}

// listen binds addr and serves h on it; name ("public", "admin") prefixes
// its errors. It returns the bound address (the port when addr ends in :0).
func (l *listeners) listen(name, addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s listener %s: %w", name, addr, err)
	}
	return l.serve(name, ln, h), nil
}

// serve serves h on ln until shutdown. Requests with ambiguous framing
// (request smuggling) are refused before net/http reads them
// (httpapi.GuardFraming).
func (l *listeners) serve(name string, ln net.Listener, h http.Handler) string {
	srv := &http.Server{
		Addr:              ln.Addr().String(),
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	l.servers = append(l.servers, srv)
	go func() {
		if err := srv.Serve(httpapi.GuardFraming(ln, l.log.With("listener", name))); !errors.Is(err, http.ErrServerClosed) {
			l.errs <- fmt.Errorf("%s listener %s: %w", name, srv.Addr, err)
		}
	}()
	return srv.Addr
}

// shutdown stops accepting and drains in-flight requests within ctx; a
// server that does not drain in time is closed.
func (l *listeners) shutdown(ctx context.Context, log *slog.Logger) {
	var wg sync.WaitGroup
	for _, s := range l.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Shutdown(ctx); err != nil {
				log.Warn("http shutdown", "addr", s.Addr, "err", err)
				_ = s.Close()
			}
		}()
	}
	wg.Wait()
}

// close closes every server at once (no draining).
func (l *listeners) close() {
	for _, s := range l.servers {
		_ = s.Close()
	}
}

// schemaChecker caches a successful schema check for a few seconds so
// /readyz probes stay cheap.
type schemaChecker struct {
	m      *migrations.Migrator
	mu     sync.Mutex
	okTill time.Time
}

func newSchemaChecker(m *migrations.Migrator) *schemaChecker { return &schemaChecker{m: m} }

func (c *schemaChecker) Check(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Now().Before(c.okTill) {
		return nil
	}
	if err := c.m.Check(ctx); err != nil {
		return err
	}
	c.okTill = time.Now().Add(10 * time.Second)
	return nil
}

// openBlob opens the blob store named by MIO_BLOB_URL; a gs:// store signs
// URLs when MIO_ATTACHMENT_URL_TTL is set.
func openBlob(ctx context.Context, cfg *config.Config) (blob.Store, error) {
	store, err := blob.Open(ctx, cfg.BlobURL, blob.Options{SignURLs: cfg.AttachmentURLTTL > 0})
	if err != nil {
		return nil, fmt.Errorf("blob store (MIO_BLOB_URL): %w", err)
	}
	return store, nil
}

// checkChannelSettings refuses per-channel settings that name a channel
// the registry does not have (the configuration checks only the slug's
// form).
func checkChannelSettings(cfg *config.Config, registry *channels.Registry) error {
	for name, keys := range map[string][]string{
		"MIO_ATTACHMENT_MAX_BYTES": slices.Collect(maps.Keys(cfg.AttachmentMaxBytesByChannel)),
		"MIO_FETCH_ALLOWED_HOSTS":  slices.Collect(maps.Keys(cfg.FetchAllowedHosts)),
	} {
		for _, k := range keys {
			if _, ok := registry.Get(k); !ok {
				return fmt.Errorf("%s: no channel %q; channels: %s", name, k, strings.Join(registry.Types(), ", "))
			}
		}
	}
	return nil
}

func closeBlob(store blob.Store, log *slog.Logger) {
	if c, ok := store.(io.Closer); ok {
		if err := c.Close(); err != nil {
			log.Warn("close blob store", "err", err)
		}
	}
}

// addMediaWorkers registers the enrich worker (queue enrich) and the
// periodic archive and retention jobs.
func addMediaWorkers(set *workers.Set, cfg *config.Config, pool *pgxpool.Pool, store blob.Store,
	registry *channels.Registry, accts *accounts.Resolver, mm *metrics.Media, log *slog.Logger, tp trace.TracerProvider) {
	clients := workers.NewFetchClients(registry, workers.FetchOptions{
		MaxBytes:          cfg.AttachmentMaxBytes,
		MaxBytesByChannel: cfg.AttachmentMaxBytesByChannel,
		AllowedHosts:      cfg.FetchAllowedHosts,
		InternalHosts:     cfg.FetchInternalHosts,
		Timeout:           cfg.FetchTimeout,
	})
	set.AddEnrich(&workers.EnrichWorker{
		Pool: pool, Blob: store, Registry: registry, Accounts: accts, Clients: clients,
		Metrics: mm, Logger: log.With("component", "enrich"),
	}, cfg.EnrichWorkers)
	set.AddArchive(&workers.ArchiveWorker{
		Pool: pool, Blob: store, Metrics: mm, Logger: log.With("component", "archive"), TracerProvider: tp,
		BatchRows: cfg.ArchiveBatchRows, MaxAge: cfg.ArchiveMaxAge,
	}, cfg.ArchiveInterval)
	set.AddRetention(&workers.RetentionWorker{
		Pool: pool, Blob: store, Metrics: mm, Logger: log.With("component", "retention"),
		InboxRetention: cfg.InboxRetention, BlobRetention: cfg.BlobRetention,
	}, cfg.RetentionInterval)
}

// apiBasePolicy is what accounts' api_base_url settings may name: https,
// or plain http with MIO_ENV=dev or on MIO_API_ALLOW_HTTP_HOSTS.
func apiBasePolicy(cfg *config.Config) channels.APIBasePolicy {
	return channels.APIBasePolicy{AllowHTTP: cfg.Env == "dev", HTTPHosts: cfg.APIAllowHTTPHosts}
}

// apiBasePolicyFromEnv is apiBasePolicy for commands that do not load the
// whole configuration (mio admin account create checks settings locally).
func apiBasePolicyFromEnv(getenv env) channels.APIBasePolicy {
	var hosts []string
	for _, h := range strings.Split(getenv("MIO_API_ALLOW_HTTP_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return channels.APIBasePolicy{AllowHTTP: getenv("MIO_ENV") != "prod", HTTPHosts: hosts}
}

// platformClient is the HTTP client of the channel adapters' platform API
// calls (sends, edits, lookups). Every call carries its own deadline (the
// dispatcher's send timeout, the adapters' budgets). Its transport keeps
// connections: the standard one keeps 2 idle per host, so concurrent sends
// to one platform would reconnect for nearly every message.
func platformClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 512
	return &http.Client{Transport: tr}
}

// startBridge connects to NATS and checks the stream. A stream that
// exists with other settings stops the start; NATS being down does not
// (the bridge reports it on /readyz and publishes once it is back).
func startBridge(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool, hub *notify.Hub, bm *metrics.Bridge,
	log *slog.Logger) (*bridge.Bridge, func(), error) {
	nc, err := bridge.Connect(bridge.ConnectOptions{URL: cfg.NatsURL, CredsFile: cfg.NatsCreds, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("NATS bridge (MIO_NATS_URL, MIO_NATS_CREDS): %w", err)
	}
	br, err := bridge.New(pool, nc, bridge.Config{Stream: cfg.NatsStream, DuplicateWindow: cfg.NatsDuplicateWindow,
		Hub: hub, Metrics: bm, Logger: log})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var mismatch *bridge.StreamMismatchError
	if err := br.CheckStream(cctx); errors.As(err, &mismatch) {
		nc.Close()
		return nil, nil, err
	} else if err != nil {
		log.Warn("nats: stream not checked yet; the bridge retries", "err", err)
	}
	return br, nc.Close, nil
}

// noneIfZero maps a setting's 0 (none) to ingest.Config's "none",
// where 0 takes the package default.
func noneIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
