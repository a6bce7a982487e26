package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
)

// ReconcileArgs fills gaps from platform history after an outage of MIO
// or of a platform's delivery: for each conversation active recently
// (mio.source_cursors, kept by the live intakes), it reads the messages
// posted after the newest one stored and stores them through the ingest
// path's dedup, so a message already stored is a duplicate and a run is
// idempotent. Channels read history when their adapter has a History
// method (Discord GET /channels/{id}/messages?after=) or a HistoryPage
// method (Slack conversations.history, newest first: see walk); Telegram
// is covered by long polling (getUpdates keeps what was not fetched), and
// WhatsApp and Zoho Cliq have no history API.
//
// The periodic run has no arguments; a run for one account (after its
// Discord Gateway session could not be resumed) names it. The Discord
// source leaves such a loss in the cursors as gaps (gap_after,
// gap_before), read ascending by gap (reconcile_gap.go), because the new
// session's live messages move the cursor past the missed ones before a
// run.
type ReconcileArgs struct {
	TenantID  uuid.UUID `json:"tenant_id,omitempty"`
	AccountID uuid.UUID `json:"account_id,omitempty"`
}

// Kind is the River job kind.
func (ReconcileArgs) Kind() string { return "mio.reconcile" }

// InsertOpts puts the reconciler on the maintenance queue; a run that
// fails is not retried (the next periodic run starts where it stopped).
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 1}
}

// ReconcileConfig configures the reconciler.
type ReconcileConfig struct {
	// ActiveWithin: conversations active (a message stored by a live
	// intake) within this window are reconciled. Default 24h.
	ActiveWithin time.Duration
	// Interval between runs. Default 5m.
	Interval time.Duration
	// MaxConversations bounds the conversations of one account per run,
	// most recently active first. Default 50.
	MaxConversations int
	// MaxPages bounds the history pages read per conversation per run
	// (the next run goes on from there). Default 10.
	MaxPages int
	// MaxWait is the longest rate-limit wait (the shared bucket's or a
	// platform's 429 Retry-After) slept inside a run; a longer one ends
	// the account's run until the next. Default 5s.
	MaxWait time.Duration
	// PageSize is the messages asked per history call. Default 100.
	PageSize int
	Logger   *slog.Logger
	// Metrics counts recovered messages and history calls; nil records
	// nowhere.
	Metrics *metrics.Reconcile
}

// ReconcileWorker runs the reconciler.
type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	Pool     *pgxpool.Pool
	Accounts *accounts.Resolver
	Registry *channels.Registry
	// Ingester commits recovered messages. The ingester is built after
	// the River client (it enqueues enrich jobs): set it before the
	// client starts.
	Ingester *ingest.Ingester
	Cfg      ReconcileConfig
}

// historyReader is an adapter that reads history oldest first (Discord).
type historyReader = channels.HistoryReader

// historyBucket is the shared token bucket (mio.rate_buckets, key
// "h:<account>") an account's history calls take from: the channel's
// Info.HistoryRateLimit, 1 call/s when it names none.
func historyBucket(ch channels.Channel, accountID uuid.UUID) db.RateWant {
	w := db.RateWant{Key: "h:" + accountID.String(), Rate: 1, Burst: 1, N: 1}
	if rl := ch.Info().HistoryRateLimit; rl.PerSec > 0 {
		w.Rate, w.Burst = rl.PerSec, max(rl.Burst, 1)
	}
	return w
}

// AddReconcile registers the reconciler and its periodic job, and returns
// the worker (set its Ingester before the River client starts).
func (s *Set) AddReconcile(pool *pgxpool.Pool, accts *accounts.Resolver, registry *channels.Registry, cfg ReconcileConfig) *ReconcileWorker {
	cfg = cfg.withDefaults()
	w := &ReconcileWorker{Pool: pool, Accounts: accts, Registry: registry, Cfg: cfg}
	addWorker(s, w, QueueMaintenance, 1)
	s.Periodic = append(s.Periodic, river.NewPeriodicJob(river.PeriodicInterval(cfg.Interval),
		func() (river.JobArgs, *river.InsertOpts) { return ReconcileArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
	return w
}

func (c ReconcileConfig) withDefaults() ReconcileConfig {
	if c.ActiveWithin <= 0 {
		c.ActiveWithin = 24 * time.Hour
	}
	if c.Interval <= 0 {
		c.Interval = 5 * time.Minute
	}
	if c.MaxConversations <= 0 {
		c.MaxConversations = 50
	}
	if c.MaxPages <= 0 {
		c.MaxPages = 10
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 5 * time.Second
	}
	if c.PageSize <= 0 {
		c.PageSize = 100
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Timeout bounds a run: every wait inside is bounded, and pages are.
func (w *ReconcileWorker) Timeout(*river.Job[ReconcileArgs]) time.Duration { return 10 * time.Minute }

// Work reconciles every tenant's accounts on channels with history.
func (w *ReconcileWorker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	cfg := w.Cfg.withDefaults()
	tenants, err := db.TenantList(ctx, w.Pool)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	only := job.Args.AccountID
	var errs []error
	for _, t := range tenants {
		if only != uuid.Nil && t.ID != job.Args.TenantID {
			continue
		}
		for _, ct := range w.Registry.Types() {
			ch, _ := w.Registry.Get(ct)
			_, reads := ch.(historyReader)
			_, pages := ch.(historyPager)
			if !reads && !pages {
				continue
			}
			var accts []*db.Account
			err := db.InTenantTx(ctx, w.Pool, t.ID, func(tx pgx.Tx) error {
				var err error
				accts, err = db.AccountList(ctx, tx, t.ID, ct)
				return err
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("accounts of tenant %s: %w", t.ID, err))
				continue
			}
			for _, a := range accts {
				if a.Status != db.AccountActive || (only != uuid.Nil && a.ID != only) {
					continue
				}
				if err := w.account(ctx, cfg, a, ch); err != nil {
					errs = append(errs, fmt.Errorf("reconcile account %s: %w", a.ID, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// account reconciles one account's recently active conversations.
func (w *ReconcileWorker) account(ctx context.Context, cfg ReconcileConfig, a *db.Account, ch channels.Channel) error {
	secrets, err := w.Accounts.Secrets(ctx, a.TenantID, a.ID)
	if err != nil {
		return err
	}
	r := &reconcileRun{w: w, cfg: cfg, acct: a, secrets: secrets, bucket: historyBucket(ch, a.ID)}
	r.hr, _ = ch.(historyReader)
	r.hp, _ = ch.(historyPager)
	since := time.Now().Add(-cfg.ActiveWithin)
	var cursors []db.SourceCursor
	err = db.InTenantTx(ctx, w.Pool, a.TenantID, func(tx pgx.Tx) error {
		if r.hp != nil { // no live cursor: from what was stored
			if err := db.SourceCursorSeed(ctx, tx, a.TenantID, a.ID, since); err != nil {
				return err
			}
		}
		var err error
		cursors, err = db.SourceCursorList(ctx, tx, a.TenantID, a.ID, since, cfg.MaxConversations)
		return err
	})
	if err != nil {
		return fmt.Errorf("cursors: %w", err)
	}
	for _, c := range cursors {
		if err := r.conversation(ctx, c); err != nil {
			if errors.Is(err, errRateExhausted) {
				cfg.Logger.Info("reconcile: rate limited; the next run goes on", "account_id", a.ID)
				return nil
			}
			if ctx.Err() != nil || db.IsUnavailable(err) {
				return err
			}
			// One conversation's failure (a deleted channel, lost
			// access) does not stop the others.
			cfg.Logger.Warn("reconcile: conversation skipped", "account_id", a.ID, "conversation_id", c.ConversationID, "err", err)
		}
	}
	return nil
}

// errRateExhausted ends an account's run: a wait longer than MaxWait.
var errRateExhausted = errors.New("reconcile: rate limit wait beyond MaxWait")

// reconcileRun is one account's pass.
type reconcileRun struct {
	w       *ReconcileWorker
	cfg     ReconcileConfig
	acct    *db.Account
	secrets channels.Account
	bucket  db.RateWant   // the account's history bucket
	hr      historyReader // one of hr, hp
	hp      historyPager
}

// conversation reads and stores the history after the cursor, page by
// page, moving the cursor with each page's commit. An open gap (Discord,
// after a Gateway session that could not be resumed) is read first,
// within the same page bound.
func (r *reconcileRun) conversation(ctx context.Context, c db.SourceCursor) error {
	if r.hp != nil {
		return r.walk(ctx, c)
	}
	pages, after := r.cfg.MaxPages, c.LastSourceID
	if c.GapAfter != "" {
		n, read, err := r.gap(ctx, c)
		if err != nil {
			return err
		}
		pages -= n
		if idLess(after, read) { // read and stored already
			after = read
		}
	}
	conv := envelope.Conversation{ID: c.ConversationID, Type: c.ConversationType}
	for range pages {
		msgs, next, err := r.page(ctx, conv, after)
		if err != nil {
			return err
		}
		if len(msgs) > 0 {
			if err := r.store(ctx, conv, msgs); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		after = next
	}
	return nil
}

// page reads one page of history after an id (historyReader).
func (r *reconcileRun) page(ctx context.Context, conv envelope.Conversation, after string) (msgs []envelope.Message, next string, err error) {
	err = r.call(ctx, func() (err error) {
		msgs, next, err = r.hr.History(ctx, r.secrets, conv, after, r.cfg.PageSize)
		return err
	})
	return msgs, next, err
}

// call takes a token from the shared bucket and makes one history call,
// waiting out rate limits up to MaxWait each.
func (r *reconcileRun) call(ctx context.Context, read func() error) error {
	ct := r.acct.ChannelType
	for {
		if err := r.token(ctx); err != nil {
			return err
		}
		err := read()
		var rl *channels.RateLimitedError
		switch {
		case err == nil:
			r.count(ct, "ok")
			return nil
		case errors.As(err, &rl):
			r.count(ct, "rate_limited")
			if rl.RetryAfter > r.cfg.MaxWait {
				return errRateExhausted
			}
			if err := sleep(ctx, rl.RetryAfter); err != nil {
				return err
			}
		default:
			r.count(ct, "error")
			return err
		}
	}
}

func (r *reconcileRun) count(ct, outcome string) {
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.Calls.WithLabelValues(ct, outcome).Inc()
	}
}

// token takes one token of the account's history bucket.
func (r *reconcileRun) token(ctx context.Context) error {
	want := r.bucket
	for {
		var g []db.RateGrant
		err := db.InTenantTx(ctx, r.w.Pool, r.acct.TenantID, func(tx pgx.Tx) error {
			var err error
			g, err = db.RateTake(ctx, tx, r.acct.TenantID, []db.RateWant{want}, nil)
			return err
		})
		if err != nil {
			return fmt.Errorf("rate bucket: %w", err)
		}
		if g[0].Granted >= 1 {
			return nil
		}
		if g[0].Wait > r.cfg.MaxWait {
			return errRateExhausted
		}
		if err := sleep(ctx, g[0].Wait); err != nil {
			return err
		}
	}
}

// store commits one page through the ingest dedup and moves the cursor
// in the same transaction.
func (r *reconcileRun) store(ctx context.Context, conv envelope.Conversation, msgs []envelope.Message) error {
	last := msgs[len(msgs)-1].SourceMessageID
	return r.storeWith(ctx, msgs, func(ctx context.Context, tx pgx.Tx) error {
		return db.SourceCursorMove(ctx, tx, r.acct.TenantID, r.acct.ID, conv.ID, last)
	})
}

// storeWith commits one page through the ingest dedup with then in the
// same transaction.
func (r *reconcileRun) storeWith(ctx context.Context, msgs []envelope.Message, then func(context.Context, pgx.Tx) error) error {
	if len(msgs) == 0 {
		return db.InTenantTx(ctx, r.w.Pool, r.acct.TenantID, func(tx pgx.Tx) error { return then(ctx, tx) })
	}
	acct := &accounts.Account{ID: r.acct.ID, TenantID: r.acct.TenantID, ChannelType: r.acct.ChannelType}
	raws := make([][]byte, len(msgs))
	for i := range msgs {
		raws[i] = msgs[i].Raw
	}
	req := ingest.Prepare(acct, &channels.Parsed{Messages: msgs}, nil, time.Now())
	for i := range req.Messages {
		req.Messages[i].Raw = raws[i]
	}
	res, err := r.w.Ingester.IngestWith(ctx, req, func(ctx context.Context, tx pgx.Tx, _ *ingest.Result) error {
		return then(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("store history: %w", err)
	}
	if r.cfg.Metrics != nil && len(res.Inserted) > 0 {
		r.cfg.Metrics.Recovered.WithLabelValues(r.acct.ChannelType).Add(float64(len(res.Inserted)))
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
