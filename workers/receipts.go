package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
)

// ReceiptsArgs applies delivery receipts: the statuses the ingest path
// stored in mio.provider_events move the matching outbox rows'
// provider_state (forward only), and sent messages without a delivered
// receipt past their deadline become timed_out.
type ReceiptsArgs struct{}

// Kind is the River job kind.
func (ReceiptsArgs) Kind() string { return "mio.receipts" }

// InsertOpts puts receipts on the maintenance queue.
func (ReceiptsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 3}
}

// ReceiptsConfig configures the receipts worker.
type ReceiptsConfig struct {
	// Interval between runs. Default 2s.
	Interval time.Duration
	// MatchWindow is how long a receipt that matches no sent message is
	// kept for a match (a receipt can arrive before the hand-off
	// commits); after it the receipt is set aside as applied. Default 10m.
	MatchWindow time.Duration
	// BatchSize caps the receipts (and time-outs) per transaction.
	// Default 500.
	BatchSize int
	// Metrics counts applied receipts; nil records nowhere.
	Metrics *metrics.Outbound
}

// ReceiptsWorker applies receipts.
type ReceiptsWorker struct {
	river.WorkerDefaults[ReceiptsArgs]
	Pool *pgxpool.Pool
	Cfg  ReceiptsConfig
	Now  func() time.Time
}

// Work applies every tenant's receipts and time-outs.
func (w *ReceiptsWorker) Work(ctx context.Context, _ *river.Job[ReceiptsArgs]) error {
	tenants, err := db.TenantList(ctx, w.Pool)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	var errs []error
	for _, t := range tenants {
		if err := ApplyReceipts(ctx, w.Pool, t.ID, w.Cfg, w.Now()); err != nil {
			errs = append(errs, fmt.Errorf("receipts of tenant %s: %w", t.ID, err))
		}
	}
	return errors.Join(errs...)
}

// providerStateOf maps a platform's receipt status to a provider state
// ("" for statuses that move nothing). WhatsApp: sent, delivered, read,
// failed.
func providerStateOf(status string) db.ProviderState {
	if status == "sent" {
		return db.ProviderAccepted
	}
	switch s := db.ProviderState(status); s {
	case db.ProviderAccepted, db.ProviderDelivered, db.ProviderRead, db.ProviderFailed, db.ProviderBounced,
		db.ProviderDropped, db.ProviderComplaint:
		return s
	}
	return ""
}

// ApplyReceipts applies one tenant's pending receipts (idempotent: each
// receipt is applied once, and provider states only move forward by
// rank) and times out overdue messages, in bounded batches.
func ApplyReceipts(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, cfg ReceiptsConfig, now time.Time) error {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.MatchWindow <= 0 {
		cfg.MatchWindow = 10 * time.Minute
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewOutbound(prometheus.NewRegistry())
	}
	for {
		var n int
		err := db.InTenantTx(ctx, pool, tenantID, func(tx pgx.Tx) error {
			pending, err := db.ProviderEventPending(ctx, tx, tenantID, cfg.BatchSize)
			if err != nil {
				return err
			}
			n = len(pending)
			var advances []db.ProviderAdvance
			var done []db.PendingReceipt
			for _, r := range pending {
				state := providerStateOf(r.Status)
				switch {
				case state == "":
					done = append(done, r) // a status that moves nothing
				case r.OutboxID != uuid.Nil:
					detail, _ := json.Marshal(receiptDetail(r))
					advances = append(advances, db.ProviderAdvance{ID: r.OutboxID, State: state, Detail: detail})
					done = append(done, r)
					cfg.Metrics.Receipts.WithLabelValues(r.ChannelType, string(state)).Inc()
				case now.Sub(r.ReceivedAt) > cfg.MatchWindow:
					done = append(done, r) // no message of ours: give up
				default:
					n-- // keep for a later match; not progress
				}
			}
			if len(advances) > 0 {
				if _, err := db.OutboxProviderAdvance(ctx, tx, tenantID, advances); err != nil {
					return err
				}
			}
			if len(done) > 0 {
				return db.ProviderEventMarkApplied(ctx, tx, tenantID, done)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n < cfg.BatchSize {
			break
		}
	}
	for {
		var rows []db.TimedOut
		err := db.InTenantTx(ctx, pool, tenantID, func(tx pgx.Tx) error {
			var err error
			rows, err = db.OutboxTimeOut(ctx, tx, tenantID, cfg.BatchSize)
			return err
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			cfg.Metrics.Receipts.WithLabelValues(r.ChannelType, string(db.ProviderTimedOut)).Inc()
		}
		if len(rows) < cfg.BatchSize {
			return nil
		}
	}
}

func receiptDetail(r db.PendingReceipt) map[string]any {
	d := map[string]any{"status": r.Status, "provider_message_id": r.ProviderMessageID}
	if r.OccurredAt != nil {
		d["occurred_at"] = r.OccurredAt.UTC().Format(time.RFC3339)
	}
	if r.RecipientID != "" {
		d["recipient_id"] = r.RecipientID
	}
	if r.Error != "" {
		d["error"] = r.Error
	}
	return d
}

// AddReceipts registers the receipts worker and runs it every
// cfg.Interval.
func (s *Set) AddReceipts(pool *pgxpool.Pool, cfg ReceiptsConfig) {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	addWorker(s, &ReceiptsWorker{Pool: pool, Cfg: cfg, Now: time.Now}, QueueMaintenance, 2)
	s.Periodic = append(s.Periodic, river.NewPeriodicJob(river.PeriodicInterval(cfg.Interval),
		func() (river.JobArgs, *river.InsertOpts) { return ReceiptsArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
}
