// Package gateway keeps the platform connections MIO holds itself instead
// of receiving webhooks: one Discord Gateway session per Discord account
// with a bot token, held by exactly one MIO process at a time.
//
// A Manager scans the accounts every few seconds and takes the lease of
// each one nobody holds (a row of mio.gateway_sessions, lease on the
// database clock, renewed every third of its TTL). A process that dies
// keeps its leases until they expire; another process takes the accounts
// over at its next scan (TTL 10 s + scan 2 s by default). Every
// MESSAGE_CREATE, _UPDATE and _DELETE is committed through the ingest
// path's dedup in one transaction together with the session's sequence
// number, fenced on the lease: a resume (in this process or the next
// holder) starts from the last committed event, so nothing is skipped,
// and what is received twice is a duplicate. A Gateway close that
// reconnecting cannot fix (the token was refused) disables the account
// with the reason in mio.gateway_sessions.error.
//
// Internal to MIO; not a stable API.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/discord"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
)

// Defaults of Config.
const (
	DefaultLeaseTTL = 10 * time.Second
	DefaultScan     = 2 * time.Second
)

// Config configures a Manager.
type Config struct {
	// Accounts opens the accounts' credentials. Required.
	Accounts *accounts.Resolver
	// Discord tunes the Gateway clients (dial client, payload bound,
	// reconnect waits).
	Discord discord.GatewayOptions
	// Holder names this process in the leases. Default a random id.
	Holder uuid.UUID
	// IdentifyInterval spaces IDENTIFYs of one account across processes.
	// Default discord.IdentifyInterval (5 s).
	IdentifyInterval time.Duration
	// IdentifyDailyLimit caps an account's IDENTIFYs per day: Discord
	// allows 1000 session starts a day and resets the token of a bot that
	// goes over; past the cap the session waits for the next day's window.
	// Default 900.
	IdentifyDailyLimit int
	// Ingester commits messages. Required.
	Ingester *ingest.Ingester
	// LeaseTTL is how long a lease lasts without renewal: the takeover
	// time after a holder dies is at most LeaseTTL + Scan. Default 10 s.
	LeaseTTL time.Duration
	Logger   *slog.Logger
	// Metrics counts committed and duplicate messages; nil records
	// nowhere.
	Metrics *metrics.Metrics
	// GatewayMetrics counts sessions and reconnects; nil records nowhere.
	GatewayMetrics *metrics.Gateway
	// OnSessionLost, when set, is called after an account's session could
	// not be resumed (events between the last committed one and the new
	// session are not replayed): mio serve enqueues a catch-up run of the
	// reconciler for the account.
	OnSessionLost func(tenantID, accountID uuid.UUID)
	// Scan is the interval between account scans. Default 2 s.
	Scan time.Duration
}

// Manager holds the Gateway sessions of the accounts whose leases it has.
type Manager struct {
	pool *pgxpool.Pool
	cfg  Config

	mu      sync.Mutex
	running map[uuid.UUID]*held
	wg      sync.WaitGroup
	// abandon: on stop, leave the leases to expire (tests simulate a
	// process that died).
	abandon bool
	scans   atomic.Int64 // completed scans (tests)
}

// held is one account whose session this process runs.
type held struct {
	tenantID uuid.UUID
	cancel   context.CancelFunc
}

// New returns a Manager; call Run.
func New(pool *pgxpool.Pool, cfg Config) *Manager {
	if cfg.Holder == uuid.Nil {
		cfg.Holder = uuid.New()
	}
	if cfg.IdentifyInterval <= 0 {
		cfg.IdentifyInterval = discord.IdentifyInterval
	}
	if cfg.IdentifyDailyLimit <= 0 {
		cfg.IdentifyDailyLimit = 900
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Scan <= 0 {
		cfg.Scan = DefaultScan
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Discord.Logger == nil {
		cfg.Discord.Logger = cfg.Logger
	}
	return &Manager{pool: pool, cfg: cfg, running: map[uuid.UUID]*held{}}
}

// Run scans for accounts until ctx ends, then stops every session and
// releases its lease.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.Scan)
	defer t.Stop()
	for {
		if err := m.scan(ctx); err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("gateway: account scan failed", "err", err)
		}
		select {
		case <-ctx.Done():
			m.mu.Lock()
			for _, h := range m.running {
				h.cancel()
			}
			m.mu.Unlock()
			m.wg.Wait()
			return
		case <-t.C:
		}
	}
}

// Held returns the number of sessions this process runs.
func (m *Manager) Held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.running)
}

// scan starts a session for every Discord account with the Gateway on
// whose lease this process gets, and stops those of disabled accounts.
func (m *Manager) scan(ctx context.Context) error {
	tenants, err := db.TenantList(ctx, m.pool)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	for _, t := range tenants {
		var (
			accts  []*db.Account
			others []uuid.UUID
		)
		err := db.InTenantTx(ctx, m.pool, t.ID, func(tx pgx.Tx) error {
			var err error
			if accts, err = db.AccountList(ctx, tx, t.ID, envelope.ChannelDiscord); err != nil {
				return err
			}
			others, err = db.GatewayLeasesHeldByOthers(ctx, tx, t.ID, m.cfg.Holder)
			return err
		})
		if err != nil {
			return fmt.Errorf("list accounts of tenant %s: %w", t.ID, err)
		}
		// Accounts another process holds are not even tried: a scan costs
		// one transaction per tenant, not one per account.
		held := make(map[uuid.UUID]bool, len(others))
		for _, id := range others {
			held[id] = true
		}
		for _, a := range accts {
			if !held[a.ID] {
				m.consider(ctx, a)
			}
		}
	}
	m.scans.Add(1)
	return nil
}

func (m *Manager) consider(ctx context.Context, a *db.Account) {
	m.mu.Lock()
	h, running := m.running[a.ID]
	m.mu.Unlock()
	if a.Status != db.AccountActive {
		if running {
			h.cancel()
		}
		return
	}
	if running {
		return
	}
	secrets, err := m.cfg.Accounts.Secrets(ctx, a.TenantID, a.ID)
	if err != nil {
		m.cfg.Logger.Debug("gateway: account secrets unavailable", "account_id", a.ID, "err", err)
		return
	}
	gcfg, err := discord.ParseGatewayConfig(secrets)
	if err != nil {
		if !errors.Is(err, discord.ErrGatewayOff) {
			m.cfg.Logger.Debug("gateway: account not connectable", "account_id", a.ID, "err", err)
		}
		return
	}
	lease := &db.GatewayLeaseParams{TenantID: a.TenantID, AccountID: a.ID, Holder: m.cfg.Holder, TTL: m.cfg.LeaseTTL}
	var sess *db.GatewaySession
	err = db.InTenantTx(ctx, m.pool, a.TenantID, func(tx pgx.Tx) error {
		var err error
		sess, err = db.GatewayLeaseAcquire(ctx, tx, lease)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return // another process holds it
	}
	if err != nil {
		m.cfg.Logger.Warn("gateway: lease", "account_id", a.ID, "err", err)
		return
	}
	hctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	m.running[a.ID] = &held{tenantID: a.TenantID, cancel: cancel}
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		m.hold(hctx, lease, gcfg, discord.GatewayResume{SessionID: sess.SessionID, URL: sess.ResumeURL, Seq: sess.Seq})
		m.mu.Lock()
		delete(m.running, a.ID)
		m.mu.Unlock()
	}()
}

// hold runs one account's session while its lease lasts.
func (m *Manager) hold(ctx context.Context, lease *db.GatewayLeaseParams, gcfg discord.GatewayConfig, resume discord.GatewayResume) {
	log := m.cfg.Logger.With("account_id", lease.AccountID)
	log.Info("gateway: session taken", "resume", resume.SessionID != "", "seq", resume.Seq)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		m.renew(ctx, cancel, lease, log)
	}()
	opts := m.cfg.Discord
	opts.Logger = log
	if gm := m.cfg.GatewayMetrics; gm != nil {
		gm.Sessions.Inc()
		defer gm.Sessions.Dec()
		opts.OnReconnect = func(reason string) { gm.Reconnects.WithLabelValues(reason).Inc() }
	}
	err := discord.NewGateway(gcfg, opts).Run(ctx, resume, &handler{m: m, lease: lease, lost: cancel})
	cancel()
	<-renewed
	var closed *discord.GatewayClosedError
	if errors.As(err, &closed) {
		m.disable(lease, closed, log)
	}
	m.mu.Lock()
	abandon := m.abandon
	m.mu.Unlock()
	if abandon {
		return
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	if err := db.InTenantTx(rctx, m.pool, lease.TenantID, func(tx pgx.Tx) error {
		return db.GatewayLeaseRelease(rctx, tx, lease)
	}); err != nil {
		log.Warn("gateway: release lease", "err", err)
	}
	log.Info("gateway: session released")
}

// renew extends the lease every third of its TTL and cancels the session
// when it is lost (taken over after a stall, or the database unreachable
// for longer than the TTL).
func (m *Manager) renew(ctx context.Context, cancel context.CancelFunc, lease *db.GatewayLeaseParams, log *slog.Logger) {
	t := time.NewTicker(m.cfg.LeaseTTL / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := db.InTenantTx(ctx, m.pool, lease.TenantID, func(tx pgx.Tx) error {
			return db.GatewayLeaseRenew(ctx, tx, lease)
		})
		switch {
		case err == nil:
			lastOK = time.Now()
		case errors.Is(err, db.ErrNotFound):
			log.Warn("gateway: lease lost; stopping the session")
			cancel()
			return
		case time.Since(lastOK) > m.cfg.LeaseTTL:
			log.Warn("gateway: lease not renewed within its TTL; stopping the session", "err", err)
			cancel()
			return
		}
	}
}

// disable turns an account off after a close reconnecting cannot fix.
func (m *Manager) disable(lease *db.GatewayLeaseParams, closed *discord.GatewayClosedError, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reason := closed.Error()
	err := db.InTenantTx(ctx, m.pool, lease.TenantID, func(tx pgx.Tx) error {
		if _, err := db.AccountSetStatus(ctx, tx, lease.TenantID, lease.AccountID, db.AccountDisabled); err != nil {
			return err
		}
		return db.GatewayFail(ctx, tx, lease.TenantID, lease.AccountID, reason)
	})
	if err != nil {
		log.Error("gateway: could not disable the account after a fatal close", "reason", reason, "err", err)
		return
	}
	m.cfg.Accounts.Forget(lease.AccountID)
	log.Error("gateway: account disabled", "reason", reason)
}

// handler persists one account's session.
type handler struct {
	m     *Manager
	lease *db.GatewayLeaseParams
	lost  context.CancelFunc // ends the session when a write finds the lease lost
}

// Identify reserves the IDENTIFY slot and, in the same transaction, opens
// a catch-up gap on every conversation of the account: a new session
// starts (the old one is lost, or none was held), and what was posted
// between the last stored event and the new session is not delivered.
// The new session cannot store a message before this commits.
func (h *handler) Identify(ctx context.Context) error {
	var slot *db.GatewayIdentifySlot
	err := db.InTenantTx(ctx, h.m.pool, h.lease.TenantID, func(tx pgx.Tx) error {
		var err error
		if slot, err = db.GatewayIdentifyTake(ctx, tx, h.lease, h.m.cfg.IdentifyInterval); err != nil {
			return err
		}
		return db.SourceCursorGapOpen(ctx, tx, h.lease.TenantID, h.lease.AccountID)
	})
	if err != nil {
		return fmt.Errorf("identify slot: %w", err)
	}
	wait := slot.Wait
	if slot.Identifies > h.m.cfg.IdentifyDailyLimit {
		wait = max(wait, slot.WindowLeft)
		h.m.cfg.Logger.Error("gateway: daily IDENTIFY budget spent; waiting for the next window",
			"account_id", h.lease.AccountID, "identifies", slot.Identifies, "wait", wait)
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (h *handler) save(ctx context.Context, tx pgx.Tx, r discord.GatewayResume) error {
	err := db.GatewaySessionSave(ctx, tx, &db.GatewaySessionSaveParams{
		TenantID: h.lease.TenantID, AccountID: h.lease.AccountID, Holder: h.lease.Holder,
		SessionID: r.SessionID, ResumeURL: r.URL, Seq: r.Seq})
	if errors.Is(err, db.ErrNotFound) {
		// Another process holds the account now: stop at once rather than
		// reconnecting next to it.
		h.lost()
		return errors.New("gateway: lease lost")
	}
	return err
}

// gapClockTolerance is added to the time of READY when it bounds the
// open catch-up gaps, for a MIO clock behind Discord's: reading a little
// of what the session delivered again costs duplicates, reading too
// little would lose messages.
const gapClockTolerance = time.Minute

// Session records the resume point. A new session (READY) also bounds the
// open catch-up gaps at its start: what is posted later arrives live.
func (h *handler) Session(ctx context.Context, r discord.GatewayResume) error {
	err := db.InTenantTx(ctx, h.m.pool, h.lease.TenantID, func(tx pgx.Tx) error {
		if err := h.save(ctx, tx, r); err != nil || r.SessionID == "" {
			return err
		}
		return db.SourceCursorGapBound(ctx, tx, h.lease.TenantID, h.lease.AccountID, discord.SnowflakeAt(time.Now().Add(gapClockTolerance)))
	})
	if err == nil && r.SessionID == "" && h.m.cfg.OnSessionLost != nil {
		// The zero resume point: the session became invalid.
		h.m.cfg.OnSessionLost(h.lease.TenantID, h.lease.AccountID)
	}
	return err
}

func (h *handler) Messages(ctx context.Context, r discord.GatewayResume, parsed *channels.Parsed) error {
	acct := &accounts.Account{ID: h.lease.AccountID, TenantID: h.lease.TenantID, ChannelType: envelope.ChannelDiscord}
	var raw []byte
	if len(parsed.Messages) > 0 {
		raw = parsed.Messages[0].Raw
	}
	req := ingest.Prepare(acct, parsed, raw, time.Now())
	res, err := h.m.cfg.Ingester.IngestWith(ctx, req, func(ctx context.Context, tx pgx.Tx, _ *ingest.Result) error {
		for _, msg := range parsed.Messages {
			if msg.Edited || msg.Deleted {
				continue
			}
			c := db.SourceCursor{ConversationID: msg.Conversation.ID, ConversationType: msg.Conversation.Type, LastSourceID: msg.SourceMessageID}
			if err := db.SourceCursorAdvance(ctx, tx, h.lease.TenantID, h.lease.AccountID, c); err != nil {
				return fmt.Errorf("advance cursor: %w", err)
			}
		}
		return h.save(ctx, tx, r)
	})
	if err != nil {
		return err
	}
	if mm := h.m.cfg.Metrics; mm != nil {
		mm.InboundMessages.WithLabelValues(envelope.ChannelDiscord).Add(float64(len(res.Inserted)))
		mm.DedupTotal.WithLabelValues(envelope.ChannelDiscord).Add(float64(res.Duplicates))
	}
	return nil
}
