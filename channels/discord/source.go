package discord

// The Discord Gateway as MIO's inbound source: one Gateway session per
// Discord account with a bot token, held by exactly one MIO process at a
// time.
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

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/metrics"
)

// Defaults of SourceConfig.
const (
	DefaultLeaseTTL = 10 * time.Second
	DefaultScan     = 2 * time.Second
)

// SourceConfig tunes the Gateway source (Options.Source). Zero values
// give the defaults.
type SourceConfig struct {
	// Gateway tunes the Gateway clients (dial client, payload bound,
	// reconnect waits).
	Gateway GatewayOptions
	// IdentifyInterval spaces IDENTIFYs of one account across processes.
	// Default IdentifyInterval (5 s).
	IdentifyInterval time.Duration
	// IdentifyDailyLimit caps an account's IDENTIFYs per day: Discord
	// allows 1000 session starts a day and resets the token of a bot that
	// goes over; past the cap the session waits for the next day's window.
	// Default 900.
	IdentifyDailyLimit int
	// LeaseTTL is how long a lease lasts without renewal: the takeover
	// time after a holder dies is at most LeaseTTL + Scan. Default 10 s.
	LeaseTTL time.Duration
	// Metrics counts sessions and reconnects; nil: built on
	// SourceDeps.Metrics.
	Metrics *metrics.Gateway
	// Scan is the interval between account scans. Default 2 s.
	Scan time.Duration
}

// RunSource holds the Gateway sessions of the Discord accounts this
// process gets the lease of, until ctx ends.
func (c *Channel) RunSource(ctx context.Context, deps channels.SourceDeps) error {
	NewManager(c.opts.Source, deps).Run(ctx)
	return nil
}

// Manager holds the Gateway sessions of the accounts whose leases it has.
type Manager struct {
	cfg  SourceConfig
	deps channels.SourceDeps

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

// NewManager returns a Manager; call Run.
func NewManager(cfg SourceConfig, deps channels.SourceDeps) *Manager {
	if deps.Holder == uuid.Nil {
		deps.Holder = uuid.New()
	}
	if cfg.IdentifyInterval <= 0 {
		cfg.IdentifyInterval = IdentifyInterval
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
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Gateway.Logger == nil {
		cfg.Gateway.Logger = deps.Logger
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewGateway(deps.Metrics)
	}
	return &Manager{cfg: cfg, deps: deps, running: map[uuid.UUID]*held{}}
}

// Run scans for accounts until ctx ends, then stops every session and
// releases its lease.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.Scan)
	defer t.Stop()
	for {
		if err := m.scan(ctx); err != nil && ctx.Err() == nil {
			m.deps.Logger.Warn("gateway: account scan failed", "err", err)
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
	tenants, err := m.deps.Store.Tenants(ctx)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	for _, tenantID := range tenants {
		var (
			accts  []channels.SourceAccount
			others []uuid.UUID
		)
		err := m.deps.Store.Tx(ctx, tenantID, func(tx channels.SourceTx) error {
			var err error
			if accts, err = tx.Accounts(ctx); err != nil {
				return err
			}
			others, err = tx.SessionsHeldElsewhere(ctx, m.deps.Holder)
			return err
		})
		if err != nil {
			return fmt.Errorf("list accounts of tenant %s: %w", tenantID, err)
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

func (m *Manager) consider(ctx context.Context, a channels.SourceAccount) {
	m.mu.Lock()
	h, running := m.running[a.ID]
	m.mu.Unlock()
	if !a.Active {
		if running {
			h.cancel()
		}
		return
	}
	if running {
		return
	}
	secrets, err := m.deps.Store.Secrets(ctx, a.TenantID, a.ID)
	if err != nil {
		m.deps.Logger.Debug("gateway: account secrets unavailable", "account_id", a.ID, "err", err)
		return
	}
	gcfg, err := ParseGatewayConfig(secrets)
	if err != nil {
		if !errors.Is(err, ErrGatewayOff) {
			m.deps.Logger.Debug("gateway: account not connectable", "account_id", a.ID, "err", err)
		}
		return
	}
	lease := channels.Lease{TenantID: a.TenantID, AccountID: a.ID, Holder: m.deps.Holder, TTL: m.cfg.LeaseTTL}
	var sess channels.SessionState
	err = m.deps.Store.Tx(ctx, a.TenantID, func(tx channels.SourceTx) error {
		var err error
		sess, err = tx.SessionAcquire(ctx, lease)
		return err
	})
	if errors.Is(err, channels.ErrLeaseHeld) {
		return // another process holds it
	}
	if err != nil {
		m.deps.Logger.Warn("gateway: lease", "account_id", a.ID, "err", err)
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
		m.hold(hctx, lease, gcfg, GatewayResume{SessionID: sess.SessionID, URL: sess.ResumeURL, Seq: sess.Seq})
		m.mu.Lock()
		delete(m.running, a.ID)
		m.mu.Unlock()
	}()
}

// hold runs one account's session while its lease lasts.
func (m *Manager) hold(ctx context.Context, lease channels.Lease, gcfg GatewayConfig, resume GatewayResume) {
	log := m.deps.Logger.With("account_id", lease.AccountID)
	log.Info("gateway: session taken", "resume", resume.SessionID != "", "seq", resume.Seq)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		m.renew(ctx, cancel, lease, log)
	}()
	opts := m.cfg.Gateway
	opts.Logger = log
	gm := m.cfg.Metrics
	gm.Sessions.Inc()
	defer gm.Sessions.Dec()
	opts.OnReconnect = func(reason string) { gm.Reconnects.WithLabelValues(reason).Inc() }
	err := NewGateway(gcfg, opts).Run(ctx, resume, &handler{m: m, lease: lease, lost: cancel})
	cancel()
	<-renewed
	var closed *GatewayClosedError
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
	if err := m.deps.Store.Tx(rctx, lease.TenantID, func(tx channels.SourceTx) error {
		return tx.SessionRelease(rctx, lease)
	}); err != nil {
		log.Warn("gateway: release lease", "err", err)
	}
	log.Info("gateway: session released")
}

// renew extends the lease every third of its TTL and cancels the session
// when it is lost (taken over after a stall, or the database unreachable
// for longer than the TTL).
func (m *Manager) renew(ctx context.Context, cancel context.CancelFunc, lease channels.Lease, log *slog.Logger) {
	t := time.NewTicker(m.cfg.LeaseTTL / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := m.deps.Store.Tx(ctx, lease.TenantID, func(tx channels.SourceTx) error {
			return tx.SessionRenew(ctx, lease)
		})
		switch {
		case err == nil:
			lastOK = time.Now()
		case errors.Is(err, channels.ErrLeaseHeld):
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
func (m *Manager) disable(lease channels.Lease, closed *GatewayClosedError, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reason := closed.Error()
	if err := m.deps.Store.Disable(ctx, lease.TenantID, lease.AccountID, reason); err != nil {
		log.Error("gateway: could not disable the account after a fatal close", "reason", reason, "err", err)
		return
	}
	log.Error("gateway: account disabled", "reason", reason)
}

// handler persists one account's session.
type handler struct {
	m     *Manager
	lease channels.Lease
	lost  context.CancelFunc // ends the session when a write finds the lease lost
}

// Identify reserves the IDENTIFY slot and, in the same transaction, opens
// a catch-up gap on every conversation of the account: a new session
// starts (the old one is lost, or none was held), and what was posted
// between the last stored event and the new session is not delivered.
// The new session cannot store a message before this commits.
func (h *handler) Identify(ctx context.Context) error {
	var slot channels.IdentifySlot
	err := h.m.deps.Store.Tx(ctx, h.lease.TenantID, func(tx channels.SourceTx) error {
		var err error
		if slot, err = tx.IdentifyTake(ctx, h.lease, h.m.cfg.IdentifyInterval); err != nil {
			return err
		}
		return tx.CursorGapOpen(ctx, h.lease.AccountID)
	})
	if err != nil {
		return fmt.Errorf("identify slot: %w", err)
	}
	wait := slot.Wait
	if slot.Identifies > h.m.cfg.IdentifyDailyLimit {
		wait = max(wait, slot.WindowLeft)
		h.m.deps.Logger.Error("gateway: daily IDENTIFY budget spent; waiting for the next window",
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

func (h *handler) save(ctx context.Context, tx channels.SourceTx, r GatewayResume) error {
	err := tx.SessionSave(ctx, h.lease, channels.SessionState{SessionID: r.SessionID, ResumeURL: r.URL, Seq: r.Seq})
	if errors.Is(err, channels.ErrLeaseHeld) {
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
func (h *handler) Session(ctx context.Context, r GatewayResume) error {
	err := h.m.deps.Store.Tx(ctx, h.lease.TenantID, func(tx channels.SourceTx) error {
		if err := h.save(ctx, tx, r); err != nil || r.SessionID == "" {
			return err
		}
		return tx.CursorGapBound(ctx, h.lease.AccountID, SnowflakeAt(time.Now().Add(gapClockTolerance)))
	})
	if err == nil && r.SessionID == "" && h.m.deps.CatchUp != nil {
		// The zero resume point: the session became invalid.
		h.m.deps.CatchUp(h.lease.TenantID, h.lease.AccountID)
	}
	return err
}

// Messages commits one event's messages, the conversations' cursors and
// the resume point together.
func (h *handler) Messages(ctx context.Context, r GatewayResume, parsed *channels.Parsed) error {
	return h.m.deps.Store.Ingest(ctx, h.lease.TenantID, h.lease.AccountID, parsed, func(tx channels.SourceTx) error {
		for _, msg := range parsed.Messages {
			if msg.Edited || msg.Deleted {
				continue
			}
			if err := tx.CursorAdvance(ctx, h.lease.AccountID, msg.Conversation, msg.SourceMessageID); err != nil {
				return fmt.Errorf("advance cursor: %w", err)
			}
		}
		return h.save(ctx, tx, r)
	})
}
