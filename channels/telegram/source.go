package telegram

// Long polling as MIO's inbound source: Telegram bots in settings mode
// "polling" (getUpdates, for bots without a public webhook URL). Each bot
// is polled by exactly one process at a time, under a lease row in
// PostgreSQL (mio.telegram_pollers); each batch's messages and the next
// offset commit in one transaction, through the same ingest writes as
// webhooks (dedup, inbox, enrich jobs), and only while the lease is still
// held, so every update is stored exactly once whatever crashes or lease
// handovers happen between fetch and commit.

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
)

// Defaults of SourceConfig.
const (
	DefaultLease      = 60 * time.Second
	DefaultRescan     = 30 * time.Second
	DefaultErrorPause = 5 * time.Second
)

// SourceConfig tunes the long-polling source (Options.Source). Zero
// values give the defaults.
type SourceConfig struct {
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
	// BeforeCommit, when set, runs between a fetch and its commit; an
	// error abandons the batch (nothing stored, the offset unchanged).
	// Tests use it to crash between fetch and commit.
	BeforeCommit func(ctx context.Context, accountID uuid.UUID, b *Batch) error
}

// RunSource polls every polling account this process gets the lease of,
// until ctx ends.
func (c *Channel) RunSource(ctx context.Context, deps channels.SourceDeps) error {
	return NewRunner(c, c.opts.Source, deps).Run(ctx)
}

// Runner polls every polling account it can lease.
type Runner struct {
	tg   *Channel
	cfg  SourceConfig
	deps channels.SourceDeps
	mu   sync.Mutex
	// running are the accounts with a polling goroutine.
	running map[uuid.UUID]context.CancelFunc
	wg      sync.WaitGroup
}

// NewRunner returns a Runner with cfg's defaults applied.
func NewRunner(tg *Channel, cfg SourceConfig, deps channels.SourceDeps) *Runner {
	if deps.Holder == uuid.Nil {
		deps.Holder = uuid.New()
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
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{tg: tg, cfg: cfg, deps: deps, running: map[uuid.UUID]context.CancelFunc{}}
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
			r.deps.Logger.Warn("polling: list accounts", "err", err)
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
	tenants, err := r.deps.Store.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID]target{}
	for _, tenantID := range tenants {
		err := r.deps.Store.Tx(ctx, tenantID, func(tx channels.SourceTx) error {
			accts, err := tx.Accounts(ctx)
			if err != nil {
				return err
			}
			for _, a := range accts {
				pc, err := ParsePollConfig(a.Settings)
				if !a.Active || err != nil || !pc.Polling {
					continue
				}
				out[a.ID] = target{tenantID: tenantID, accountID: a.ID, deleteWebhook: pc.DeleteWebhook}
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
	log := r.deps.Logger.With("account_id", tg.accountID)
	lease := channels.Lease{TenantID: tg.tenantID, AccountID: tg.accountID, Holder: r.deps.Holder, TTL: r.cfg.Lease}
	defer r.release(lease, log)
	webhookDeleted := false
	for ctx.Err() == nil {
		offset, err := r.acquire(ctx, lease)
		if err != nil {
			if !errors.Is(err, channels.ErrLeaseHeld) && ctx.Err() == nil {
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
			if !errors.Is(err, channels.ErrLeaseHeld) {
				log.Warn("polling: getUpdates or commit failed", "err", err)
			}
			r.pause(ctx, r.cfg.ErrorPause)
		}
	}
}

// afterCommitTimeout bounds the callback answers of one committed batch.
const afterCommitTimeout = 10 * time.Second

// pollWhileLeased fetches and commits batches until an error (a lost
// lease is channels.ErrLeaseHeld).
func (r *Runner) pollWhileLeased(ctx context.Context, tg target, lease channels.Lease, poller *Poller,
	offset int64, log *slog.Logger) error {
	for ctx.Err() == nil {
		b, err := poller.Fetch(ctx, offset, r.cfg.PollTimeout, MaxPollLimit)
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
		err = r.deps.Store.Ingest(ctx, tg.tenantID, tg.accountID, b.Parsed, func(tx channels.SourceTx) error {
			return tx.OffsetCommit(ctx, lease, next)
		})
		if err != nil {
			return err
		}
		if ack := b.Parsed.AfterCommit; ack != nil {
			go func() {
				actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), afterCommitTimeout)
				defer cancel()
				if err := ack(actx); err != nil {
					log.Warn("polling: answerCallbackQuery failed", "err", err)
				}
			}()
		}
		offset = next
	}
	return ctx.Err()
}

func (r *Runner) acquire(ctx context.Context, lease channels.Lease) (int64, error) {
	var offset int64
	err := r.deps.Store.Tx(ctx, lease.TenantID, func(tx channels.SourceTx) error {
		var err error
		offset, err = tx.OffsetAcquire(ctx, lease)
		return err
	})
	return offset, err
}

// release gives the lease up when the loop stops, so another process
// takes the bot over at once.
func (r *Runner) release(lease channels.Lease, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.deps.Store.Tx(ctx, lease.TenantID, func(tx channels.SourceTx) error {
		return tx.OffsetRelease(ctx, lease)
	})
	if err != nil {
		log.Warn("polling: release lease", "err", err)
	}
}

func (r *Runner) poller(ctx context.Context, tg target) (*Poller, error) {
	acct, err := r.deps.Store.Secrets(ctx, tg.tenantID, tg.accountID)
	if err != nil {
		return nil, err
	}
	return r.tg.NewPoller(acct)
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
