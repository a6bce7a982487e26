package workers

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/channels"
)

// SetAfterWrite installs a hook run after a batch's objects are written and
// before its cursor commits (crash simulation).
func (w *ArchiveWorker) SetAfterWrite(f func(tenantID uuid.UUID) error) { w.afterWrite = f }

// SetSpoolMemory sets how much of an object a batch keeps in memory
// before it spools the object to a temporary file.
func (w *ArchiveWorker) SetSpoolMemory(n int) { w.spoolMemory = n }

// SweepTenant runs one sweep of a tenant as the periodic sweeper does
// (cfg with its defaults) and returns how many rows it enqueued.
func SweepTenant(ctx context.Context, pool *pgxpool.Pool, client *river.Client[pgx.Tx], tenantID uuid.UUID, cfg OutboxSweepConfig) (int, error) {
	cfg.setDefaults()
	w := &OutboxSweepWorker{Pool: pool, Cfg: cfg}
	return w.sweepTenant(ctx, client, tenantID)
}

// HistoryBucket is the bucket the reconciler's history calls of an
// account of ch take from: its key, rate and burst.
func HistoryBucket(ch channels.Channel, accountID uuid.UUID) (key string, rate, burst float64) {
	w := historyBucket(ch, accountID)
	return w.Key, w.Rate, w.Burst
}

// JobMiddleware is the River middleware NewClient installs for tp.
var JobMiddleware = jobMiddleware
