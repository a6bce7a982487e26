// Package polling runs MIO's pull-based update intakes: Telegram bots in
// settings mode "polling" (getUpdates long polling, for bots without a
// public webhook URL). Each bot is polled by exactly one process at a
// time, under a lease row in PostgreSQL (mio.telegram_pollers); each
// batch's messages and the next offset commit in one transaction, through
// the same ingest writes as webhooks (dedup, inbox, enrich jobs), and only
// while the lease is still held, so every update is stored exactly once
// whatever crashes or lease handovers happen between fetch and commit.
//
// Internal to MIO; not a stable API.
package polling

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels/telegram"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
)

// Defaults of Config.
const (
	DefaultLease       = 60 * time.Second
	DefaultRescan      = 30 * time.Second
	DefaultErrorPause  = 5 * time.Second
	DefaultPollTimeout = telegram.DefaultPollTimeout
)

// Config configures a Runner.
type Config struct {
	Pool     *pgxpool.Pool
	Ingester *ingest.Ingester
	Accounts *accounts.Resolver
	Telegram *telegram.Channel
	Logger   *slog.Logger
	// Holder identifies this process in leases. Default a random id.
	Holder uuid.UUID
	// Lease is how long a bot's lease lasts without a commit; another
	// process takes a dead poller's bot over after it. It must exceed
	// PollTimeout. Default 60s.
	Lease time.Duration
	// PollTimeout is getUpdates' long-poll timeout. Default 25s.
	PollTimeout time.Duration
	// Rescan is how often polling accounts are listed (new, changed,
	// disabled accounts; bots whose lease another process holds). Default
	// 30s.
	Rescan time.Duration
	// ErrorPause is the wait after a failed getUpdates or commit. Default
	// 5s (with jitter).
	ErrorPause time.Duration
	// OnStored, when set, is told after each commit how many of the
	// batch's messages were new and how many were duplicates (the
	// inbound metrics webhooks also feed).
	OnStored func(channelType string, inserted, duplicates int)
	// BeforeCommit, when set, runs between a fetch and its commit; an
	// error abandons the batch (nothing stored, the offset unchanged).
	// Tests use it to crash between fetch and commit.
	BeforeCommit func(ctx context.Context, accountID uuid.UUID, b *telegram.Batch) error
}

// Runner polls every polling account it can lease.
type Runner struct {
	cfg Config
	mu  sync.Mutex
	// running are the accounts with a polling goroutine.
	running map[uuid.UUID]context.CancelFunc
	wg      sync.WaitGroup
}

// New returns a Runner with cfg's defaults applied.
func New(cfg Config) *Runner {
	if cfg.Holder == uuid.Nil {
		cfg.Holder = uuid.New()
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = DefaultRescan
	}
	if cfg.ErrorPause <= 0 {
		cfg.ErrorPause = DefaultErrorPause
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, running: map[uuid.UUID]context.CancelFunc{}}
}

// Run lists polling accounts every Rescan and keeps one polling loop per
// account until ctx ends; it returns after every loop stopped and gave
// its lease up.
func (r *Runner) Run(ctx context.Context) error {
	defer r.wg.Wait()
	t := time.NewTicker(r.cfg.Rescan)
	defer t.Stop()
	for {
		if err := r.scan(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("polling: list accounts", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// target is one polling account.
type target struct {
	tenantID, accountID uuid.UUID
	deleteWebhook       bool
}

// scan starts loops for new polling accounts and stops those of accounts
// no longer polling (disabled, deleted, mode changed).
func (r *Runner) scan(ctx context.Context) error {
	targets, err := r.targets(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, stop := range r.running {
		if _, ok := targets[id]; !ok {
			stop()
			delete(r.running, id)
		}
	}
	for id, tg := range targets {
		if _, ok := r.running[id]; ok {
			continue
		}
		lctx, stop := context.WithCancel(ctx)
		r.running[id] = stop
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.loop(lctx, tg)
		}()
	}
	return nil
}

// targets lists the active Telegram accounts in mode polling, tenant by
// tenant (row-level security).
func (r *Runner) targets(ctx context.Context) (map[uuid.UUID]target, error) {
	tenants, err := db.TenantList(ctx, r.cfg.Pool)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID]target{}
	for _, tn := range tenants {
		err := db.InTenantTx(ctx, r.cfg.Pool, tn.ID, func(tx pgx.Tx) error {
			accts, err := db.AccountList(ctx, tx, tn.ID, envelope.ChannelTelegram)
			if err != nil {
				return err
			}
			for _, a := range accts {
				pc, err := telegram.ParsePollConfig(a.Settings)
				if a.Status != db.AccountActive || err != nil || !pc.Polling {
					continue
				}
				out[a.ID] = target{tenantID: tn.ID, accountID: a.ID, deleteWebhook: pc.DeleteWebhook}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loop polls one account while this process holds its lease, and waits
// for the lease while another process does.
func (r *Runner) loop(ctx context.Context, tg target) {
	log := r.cfg.Logger.With("account_id", tg.accountID)
	lease := db.TelegramPoller{TenantID: tg.tenantID, AccountID: tg.accountID, Holder: r.cfg.Holder, Lease: r.cfg.Lease}
	defer r.release(lease, log)
	webhookDeleted := false
	for ctx.Err() == nil {
		offset, err := r.acquire(ctx, lease)
		if err != nil {
			if !errors.Is(err, db.ErrLeaseHeld) && ctx.Err() == nil {
				log.Warn("polling: lease", "err", err)
			}
			r.pause(ctx, min(r.cfg.Lease/4, r.cfg.ErrorPause))
			continue
		}
		poller, err := r.poller(ctx, tg)
		if err != nil {
			log.Warn("polling: account cannot poll", "err", err)
			r.pause(ctx, r.cfg.Rescan)
			continue
		}
		if tg.deleteWebhook && !webhookDeleted {
			if err := poller.DeleteWebhook(ctx); err != nil {
				log.Warn("polling: deleteWebhook", "err", err)
			} else {
				webhookDeleted = true
			}
		}
		if err := r.pollWhileLeased(ctx, tg, lease, poller, offset, log); err != nil && ctx.Err() == nil {
			if !errors.Is(err, db.ErrLeaseHeld) {
				log.Warn("polling: getUpdates or commit failed", "err", err)
			}
			r.pause(ctx, r.cfg.ErrorPause)
		}
	}
}

// pollWhileLeased fetches and commits batches until an error (a lost
// lease is db.ErrLeaseHeld).
func (r *Runner) pollWhileLeased(ctx context.Context, tg target, lease db.TelegramPoller, poller *telegram.Poller,
	offset int64, log *slog.Logger) error {
	acct, err := r.account(ctx, tg)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		b, err := poller.Fetch(ctx, offset, r.cfg.PollTimeout, telegram.MaxPollLimit)
		if err != nil {
			return err
		}
		for _, why := range b.Parsed.Ignored {
			log.Warn("polling: update left out", "reason", why)
		}
		if r.cfg.BeforeCommit != nil {
			if err := r.cfg.BeforeCommit(ctx, tg.accountID, b); err != nil {
				return err
			}
		}
		next := b.Next
		commit := func(ctx context.Context, tx pgx.Tx, _ *ingest.Result) error {
			return db.TelegramPollerCommit(ctx, tx, lease, next)
		}
		req := ingest.Prepare(acct, b.Parsed, nil, time.Now())
		for i := range req.Messages {
			// Each message keeps its own update as raw.
			req.Messages[i].Raw = b.Parsed.Messages[i].Raw
		}
		res, err := r.cfg.Ingester.IngestWith(ctx, req, commit)
		if err != nil {
			return err
		}
		if r.cfg.OnStored != nil && len(req.Messages) > 0 {
			r.cfg.OnStored(envelope.ChannelTelegram, len(res.Inserted), res.Duplicates)
		}
		offset = next
	}
	return ctx.Err()
}

func (r *Runner) acquire(ctx context.Context, lease db.TelegramPoller) (int64, error) {
	var offset int64
	err := db.InTenantTx(ctx, r.cfg.Pool, lease.TenantID, func(tx pgx.Tx) error {
		var err error
		offset, err = db.TelegramPollerAcquire(ctx, tx, lease)
		return err
	})
	return offset, err
}

// release gives the lease up when the loop stops, so another process
// takes the bot over at once.
func (r *Runner) release(lease db.TelegramPoller, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := db.InTenantTx(ctx, r.cfg.Pool, lease.TenantID, func(tx pgx.Tx) error {
		return db.TelegramPollerRelease(ctx, tx, lease)
	})
	if err != nil {
		log.Warn("polling: release lease", "err", err)
	}
}

func (r *Runner) account(ctx context.Context, tg target) (*accounts.Account, error) {
	return r.cfg.Accounts.Outbound(ctx, tg.tenantID, tg.accountID)
}

func (r *Runner) poller(ctx context.Context, tg target) (*telegram.Poller, error) {
	acct, err := r.cfg.Accounts.Secrets(ctx, tg.tenantID, tg.accountID)
	if err != nil {
		return nil, err
	}
	return r.cfg.Telegram.NewPoller(acct)
}

// pause waits d with ±20% jitter, or until ctx ends.
func (r *Runner) pause(ctx context.Context, d time.Duration) {
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
