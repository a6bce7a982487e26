// Package notify wakes waiting consumers when new inbox messages commit.
// In the same process a commit wakes subscribers at once; other processes
// learn through PostgreSQL LISTEN/NOTIFY. NOTIFY is debounced and sent
// outside ingest transactions: a NOTIFY inside every insert transaction
// serializes commits on PostgreSQL's notification queue lock and roughly
// halves commit throughput.
//
// A hub sends those NOTIFYs only while another MIO process is listening.
// Hubs announce themselves with a hello on the channel when they start
// listening and every HelloInterval, and answer a newcomer's hello with
// their own, so each hub knows its peers within a round trip. A lone
// process (the usual single-replica deployment) sends no NOTIFY at all:
// each one woke every listening backend of the database and, under
// ingest, cost the machine a few thousand context switches a second.
//
// Internal to MIO; not a stable API.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Channel is the PostgreSQL notification channel.
const Channel = "mio_inbox"

// Peer discovery over Channel: a payload "<self>|hello" announces a hub.
const (
	// HelloInterval is how often a hub announces itself.
	HelloInterval = 10 * time.Second
	// peerTTL is how long a peer counts as present after it was last
	// heard (a hello or a wake-up).
	peerTTL = 3 * HelloInterval
	// peerSettle is how long after meeting a new peer a hub wakes all
	// its subscribers once: commits made before the two hubs knew of
	// each other were not announced.
	peerSettle = 100 * time.Millisecond
	hello      = "hello"
)

// Hub fans out "new messages for tenant" signals.
type Hub struct {
	pool      *pgxpool.Pool
	listenURL string
	log       *slog.Logger
	debounce  time.Duration
	self      string // identifies this process's own notifications

	mu      sync.Mutex
	subs    map[uuid.UUID]map[*Sub]struct{}
	pending map[uuid.UUID]struct{}
	peers   map[string]time.Time // other hubs, by self, when last heard
	// peersUntil is when the last peer heard expires: until then a
	// publish is announced to other processes, after it not at all.
	peersUntil time.Time
	kick       chan struct{}
}

// Options configure a Hub.
type Options struct {
	// Debounce is the longest a NOTIFY waits to gather tenants. Default
	// 2ms.
	Debounce time.Duration
	// ListenURL, when set, is a direct connection URL (a session, never
	// a transaction pooler) the Hub LISTENs on; empty listens on a
	// connection taken from the pool. LISTEN needs a session: behind
	// PgBouncer in transaction mode a pooled LISTEN hears nothing.
	ListenURL string
}

// New returns a Hub. pool may be nil (in-process only, tests).
func New(pool *pgxpool.Pool, log *slog.Logger, opts Options) *Hub {
	if opts.Debounce == 0 {
		opts.Debounce = 2 * time.Millisecond
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hub{
		pool: pool, listenURL: opts.ListenURL, log: log, debounce: opts.Debounce, self: uuid.NewString()[:8],
		subs: map[uuid.UUID]map[*Sub]struct{}{}, pending: map[uuid.UUID]struct{}{},
		peers: map[string]time.Time{}, kick: make(chan struct{}, 1),
	}
}

// Sub receives a value on C (buffered, coalescing) whenever its tenant
// may have new messages.
type Sub struct {
	C      chan struct{}
	tenant uuid.UUID
	hub    *Hub
}

// Subscribe registers interest in a tenant's new messages.
func (h *Hub) Subscribe(tenantID uuid.UUID) *Sub {
	s := &Sub{C: make(chan struct{}, 1), tenant: tenantID, hub: h}
	h.mu.Lock()
	m := h.subs[tenantID]
	if m == nil {
		m = map[*Sub]struct{}{}
		h.subs[tenantID] = m
	}
	m[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Close unregisters the subscription.
func (s *Sub) Close() {
	s.hub.mu.Lock()
	if m := s.hub.subs[s.tenant]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(s.hub.subs, s.tenant)
		}
	}
	s.hub.mu.Unlock()
}

// Publish signals, after a commit, that tenantID has new messages: local
// subscribers wake now, other processes after the debounced NOTIFY.
func (h *Hub) Publish(tenantID uuid.UUID) {
	h.mu.Lock()
	h.wakeLocked(tenantID)
	if !time.Now().Before(h.peersUntil) {
		// No other process listens: nothing to send.
		h.mu.Unlock()
		return
	}
	h.pending[tenantID] = struct{}{}
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

func (h *Hub) wakeLocked(tenantID uuid.UUID) {
	for s := range h.subs[tenantID] {
		select {
		case s.C <- struct{}{}:
		default:
		}
	}
}

// Run sends debounced NOTIFYs and listens for other processes' until ctx
// is done. It reconnects with backoff on database errors.
func (h *Hub) Run(ctx context.Context) {
	if h.pool == nil {
		<-ctx.Done()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); h.sendLoop(ctx) }()
	go func() { defer wg.Done(); h.listenLoop(ctx) }()
	wg.Wait()
}

func (h *Hub) sendLoop(ctx context.Context) {
	helloTick := time.NewTicker(HelloInterval)
	defer helloTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-helloTick.C:
			h.send(ctx, h.self+"|"+hello)
			continue
		case <-h.kick:
		}
		// Gather what else commits within the debounce window.
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.debounce):
		}
		h.mu.Lock()
		tenants := make([]string, 0, len(h.pending))
		for t := range h.pending {
			tenants = append(tenants, t.String())
		}
		clear(h.pending)
		h.mu.Unlock()
		for len(tenants) > 0 {
			// NOTIFY payloads are limited to 8000 bytes: ~200 tenants each.
			n := min(len(tenants), 200)
			payload := h.self + "|" + strings.Join(tenants[:n], ",")
			tenants = tenants[n:]
			h.send(ctx, payload)
		}
	}
}

// send sends one NOTIFY on the pool.
func (h *Hub) send(ctx context.Context, payload string) {
	if _, err := h.pool.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, payload); err != nil && ctx.Err() == nil {
		h.log.Warn("notify: send", "err", err)
	}
}

// Peers is how many other hubs this one has heard within the last three
// hello intervals.
func (h *Hub) Peers() int {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, at := range h.peers {
		if now.Sub(at) > peerTTL {
			delete(h.peers, p)
		}
	}
	return len(h.peers)
}

// heard records a notification from peer and reports whether the peer is
// new (unknown or forgotten).
func (h *Hub) heard(peer string) bool {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.peers[peer]
	h.peers[peer] = now
	h.peersUntil = now.Add(peerTTL)
	return !ok || now.Sub(at) > peerTTL
}

// announce says hello on pc, its listening connection, and wakes
// every subscriber once peerSettle later: what the peers committed before
// they heard it was not announced to this hub.
func (h *Hub) announce(ctx context.Context, pc *pgx.Conn) error {
	if _, err := pc.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, h.self+"|"+hello); err != nil {
		return err
	}
	time.AfterFunc(peerSettle, h.wakeAll)
	return nil
}

func (h *Hub) listenLoop(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := h.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("notify: listener lost; reconnecting", "err", err, "backoff", backoff.String())
		// A missed notification only delays a consumer until its next
		// poll; wake everyone once after reconnecting to be safe.
		h.wakeAll()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff + rand.N(backoff)):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (h *Hub) listenOnce(ctx context.Context) error {
	pc, err := h.listenConn(ctx)
	if err != nil {
		return err
	}
	defer pc.Close(context.Background())
	if _, err := pc.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	// Announce this hub: peers answer, and from then on NOTIFY for it.
	if err := h.announce(ctx, pc); err != nil {
		return err
	}
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		from, list, ok := strings.Cut(n.Payload, "|")
		if !ok || from == h.self {
			continue
		}
		if h.heard(from) {
			// A new peer: answer, so that it knows of this hub.
			if err := h.announce(ctx, pc); err != nil {
				return err
			}
		}
		if list == hello {
			continue
		}
		h.mu.Lock()
		for _, s := range strings.Split(list, ",") {
			if id, err := uuid.Parse(s); err == nil {
				h.wakeLocked(id)
			}
		}
		h.mu.Unlock()
	}
}

// listenConn is the connection to LISTEN on: a direct one to ListenURL,
// else one taken out of the pool for good (it carries LISTEN state, so it
// must never be returned).
func (h *Hub) listenConn(ctx context.Context) (*pgx.Conn, error) {
	if h.listenURL != "" {
		c, err := pgx.Connect(ctx, h.listenURL)
		if err != nil {
			return nil, fmt.Errorf("notify: listen connection: %w", err)
		}
		return c, nil
	}
	conn, err := h.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return conn.Hijack(), nil
}

func (h *Hub) wakeAll() {
	h.mu.Lock()
	for t := range h.subs {
		h.wakeLocked(t)
	}
	h.mu.Unlock()
}
