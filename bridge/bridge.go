// Package bridge is MIO's NATS bridge (docs/contract.md §9, docs/nats.md): a durable
// reader of each tenant's log that publishes every committed inbound
// message, the same message again once its attachments settle, and every
// outbound event to a JetStream stream.
//
// The bridge reads the log like consumers and the archive do (db.LogPos:
// snapshot windows, so no row is skipped whatever the commit order and an
// open transaction elsewhere holds nothing back). Its positions live in
// mio.bridge_cursors and advance only after JetStream acknowledged every
// event read before them; a crash between the acks and the advance
// republishes those events with the same Nats-Msg-Id, and JetStream's
// duplicate window drops them, so every event is stored exactly once.
// One process publishes a tenant at a time (a session-level advisory lock
// per tenant); the others stand by and take over when its database
// session ends.
//
// Internal to MIO; not a stable API.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/semaphore"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
)

// Defaults.
const (
	DefaultStream          = "MIO"
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultMaxPending      = 1024
	DefaultPollInterval    = time.Second
	DefaultClaimInterval   = 2 * time.Second
)

// Config configures a Bridge.
type Config struct {
	// ClaimInterval is how often the bridge looks for tenants nobody
	// publishes (new tenants, a failed replica's) and checks its lock
	// session. Default 2s.
	ClaimInterval time.Duration
	// DuplicateWindow is the duplicate window of a stream MIO creates,
	// and the least an existing stream must have. Default 2m.
	DuplicateWindow time.Duration
	// Hub wakes the bridge when messages commit; nil polls only.
	Hub *notify.Hub
	// Logger; default discards.
	Logger *slog.Logger
	// BatchRows is the most events one read of a stream's log takes.
	// Default MaxPending / 2 (a stream reads its next batch while the
	// current one awaits its acks). At most MaxPending.
	BatchRows int
	// MaxPending bounds the publishes awaiting their JetStream ack across
	// the process. Default 1024.
	MaxPending int
	// Metrics; nil records nothing.
	Metrics *metrics.Bridge
	// PollInterval is how often an idle reader looks at the log without
	// being woken. Default 1s.
	PollInterval time.Duration
	// Stream is the JetStream stream. Default MIO.
	Stream string
}

func (c *Config) defaults() {
	if c.ClaimInterval <= 0 {
		c.ClaimInterval = DefaultClaimInterval
	}
	if c.DuplicateWindow <= 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.BatchRows <= 0 {
		c.BatchRows = max(1, c.MaxPending/2)
	}
	c.BatchRows = min(c.BatchRows, c.MaxPending)
	if c.Metrics == nil {
		c.Metrics = metrics.NewBridge(nil)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
}

// Bridge publishes the tenants it holds to JetStream.
type Bridge struct {
	cfg     Config
	pool    *pgxpool.Pool
	nc      *nats.Conn
	js      jetstream.JetStream
	pending *semaphore.Weighted
	log     *slog.Logger

	mu        sync.Mutex
	streamErr error // nil once the stream was checked
	streamOK  bool
	lockConn  *pgx.Conn // the current lock session (tests end it)

	// afterAcks runs after a batch was acknowledged and before the
	// position advances (tests simulate a crash there).
	afterAcks func(tenantID uuid.UUID, stream db.BridgeStream) error
}

// New returns a bridge publishing through nc (see Connect).
func New(pool *pgxpool.Pool, nc *nats.Conn, cfg Config) (*Bridge, error) {
	cfg.defaults()
	// The JetStream client's own bound is never reached: the bridge keeps
	// at most MaxPending in flight (pending).
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.MaxPending+1),
		jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	return &Bridge{cfg: cfg, pool: pool, nc: nc, js: js, pending: semaphore.NewWeighted(int64(cfg.MaxPending)),
		log: cfg.Logger, streamErr: errors.New("nats: stream not checked yet")}, nil
}

// ConnectOptions are the NATS connection settings.
type ConnectOptions struct {
	// URL is nats://host:port or tls://host:port (comma-separated for a
	// cluster).
	URL string
	// CredsFile is a NATS credentials file (JWT + nkey); empty: none.
	CredsFile string
	// Name is the connection name shown by the server. Default "mio".
	Name   string
	Logger *slog.Logger
}

// Connect opens a NATS connection that reconnects forever with backoff
// and that does not buffer while disconnected (the backlog stays in
// PostgreSQL). It returns at once even when the server is down.
func Connect(o ConnectOptions) (*nats.Conn, error) {
	if o.Name == "" {
		o.Name = "mio"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			return min(time.Duration(attempts)*500*time.Millisecond, 5*time.Second)
		}),
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("nats: disconnected", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats: reconnected", "url", c.ConnectedUrlRedacted()) }),
	}
	if o.CredsFile != "" {
		if _, err := os.Stat(o.CredsFile); err != nil {
			return nil, fmt.Errorf("nats: credentials file: %w", err)
		}
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect: %w", err)
	}
	return nc, nil
}

// CheckStream creates or checks the stream now. A *StreamMismatchError is
// final (the process should not start); other errors (NATS down) are
// retried by Run.
func (b *Bridge) CheckStream(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.streamOK {
		return nil
	}
	err := EnsureStream(ctx, b.js, b.cfg.Stream, b.cfg.DuplicateWindow)
	b.streamErr, b.streamOK = err, err == nil
	return err
}

// streamFailed makes the next step check the stream again (it may have
// been deleted or changed) and Ready report err meanwhile.
func (b *Bridge) streamFailed(err error) {
	b.mu.Lock()
	b.streamOK, b.streamErr = false, err
	b.mu.Unlock()
}

// Ready reports whether the bridge can publish: NATS connected and the
// stream checked.
func (b *Bridge) Ready() error {
	if !b.nc.IsConnected() {
		return fmt.Errorf("nats: %s", b.nc.Status())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streamErr
}

// Run publishes until ctx is done: it claims every published tenant
// nobody else holds and runs its readers.
func (b *Bridge) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := b.session(ctx)
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("bridge: lock session lost; reconnecting", "err", err, "backoff", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// session holds the tenant locks on one database connection: when it
// ends, every lock it held is released, so its tenants' readers stop.
func (b *Bridge) session(ctx context.Context) error {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection carries the locks: never hand it back to the pool.
	lockConn := conn.Hijack()
	defer lockConn.Close(context.Background()) //nolint:errcheck
	b.mu.Lock()
	b.lockConn = lockConn
	b.mu.Unlock()

	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel() // the locks are going: stop the readers first
		wg.Wait()
	}()
	held := map[uuid.UUID]context.CancelFunc{}
	tick := time.NewTicker(b.cfg.ClaimInterval)
	defer tick.Stop()
	for n := 0; ; n++ {
		if _, err := lockConn.Exec(sctx, "SELECT 1"); err != nil {
			return err
		}
		// Held tenants' opt-outs are looked at every 5th round.
		if err := b.claim(sctx, lockConn, held, &wg, n%5 == 0); err != nil {
			return err
		}
		select {
		case <-sctx.Done():
			return sctx.Err()
		case <-tick.C:
		}
	}
}

// claim takes the locks of published tenants nobody holds (one round
// trip for all of them) and starts their readers; with checkHeld, it
// also releases the held tenants that opted out.
func (b *Bridge) claim(ctx context.Context, lockConn *pgx.Conn, held map[uuid.UUID]context.CancelFunc, wg *sync.WaitGroup, checkHeld bool) error {
	tenants, err := db.TenantList(ctx, b.pool)
	if err != nil {
		b.log.Warn("bridge: list tenants", "err", err)
		return nil
	}
	free := make([]uuid.UUID, 0, len(tenants))
	for _, t := range tenants {
		stop, holding := held[t.ID]
		if !holding {
			free = append(free, t.ID)
			continue
		}
		if !checkHeld || b.published(ctx, t.ID, true) {
			continue
		}
		stop()
		delete(held, t.ID)
		if err := db.BridgeUnlock(ctx, lockConn, t.ID); err != nil {
			return err
		}
		b.log.Info("bridge: tenant opted out", "tenant_id", t.ID)
	}
	locked, err := db.BridgeTryLock(ctx, lockConn, free)
	if err != nil {
		return err
	}
	for _, id := range locked {
		if !b.published(ctx, id, false) {
			if err := db.BridgeUnlock(ctx, lockConn, id); err != nil {
				return err
			}
			continue
		}
		tctx, cancel := context.WithCancel(ctx)
		held[id] = cancel
		b.log.Info("bridge: publishing tenant", "tenant_id", id)
		for _, s := range []db.BridgeStream{db.BridgeInbound, db.BridgeInboundEnriched, db.BridgeOutbound} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.runReader(tctx, id, s)
			}()
		}
	}
	return nil
}

// published reads the tenant's opt-out setting; when it cannot be read,
// it answers onError.
func (b *Bridge) published(ctx context.Context, tenantID uuid.UUID, onError bool) bool {
	var publish bool
	err := db.InTenantTx(ctx, b.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		publish, err = db.BridgePublishGet(ctx, tx, tenantID)
		return err
	})
	if err != nil {
		b.log.Warn("bridge: tenant setting", "tenant_id", tenantID, "err", err)
		return onError
	}
	return publish
}
