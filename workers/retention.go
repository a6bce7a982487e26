package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
)

// RetentionArgs prunes archived inbox messages and unreferenced blobs.
type RetentionArgs struct{}

// Kind is the River job kind.
func (RetentionArgs) Kind() string { return "mio.retention" }

// InsertOpts puts retention on the maintenance queue.
func (RetentionArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 3}
}

// Retention defaults.
const (
	DefaultInboxRetention = 7 * 24 * time.Hour
	DefaultBlobRetention  = 24 * time.Hour
)

// RetentionWorker removes:
//
//   - whole inbox day partitions that ended more than InboxRetention ago,
//     once every message in them is ready and archived (an unarchived
//     message is never deleted): DETACH and DROP, no row deletes and no
//     dead tuples; their attachment rows go and the
//     blob references those held are released;
//   - in bounded batches, the archived messages left with a received_at
//     more than InboxRetention ago (in the default partition: ids that
//     are not UUIDv7; or received long before they were accepted), with
//     their attachment rows, the same way. In steady state the days are
//     gone before their rows qualify and this finds nothing;
//   - blobs unreferenced for more than BlobRetention (content whose last
//     message was pruned, or that a crashed enrich run reserved and never
//     referenced): object first, then its registry row, under the blob's
//     advisory lock so a concurrent enrich run cannot lose its bytes.
//
// Dedup keys have their own job (DedupPruneWorker); terminal outbox rows
// belong to the outbound side.
type RetentionWorker struct {
	river.WorkerDefaults[RetentionArgs]
	Pool    *pgxpool.Pool
	Blob    blob.Store
	Metrics *metrics.Media
	Logger  *slog.Logger
	// InboxRetention default 7 days; BlobRetention default 24 hours.
	InboxRetention time.Duration
	BlobRetention  time.Duration
	// BatchSize rows per statement (default 1,000) and MaxPerRun rows per
	// run (default 100,000) for the inbox; BlobBatch (default 100) and
	// MaxBlobsPerRun (default 10,000) for blobs.
	BatchSize      int
	MaxPerRun      int
	BlobBatch      int
	MaxBlobsPerRun int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (w *RetentionWorker) defaults() {
	if w.InboxRetention <= 0 {
		w.InboxRetention = DefaultInboxRetention
	}
	if w.BlobRetention <= 0 {
		w.BlobRetention = DefaultBlobRetention
	}
	if w.BatchSize <= 0 {
		w.BatchSize = 1000
	}
	if w.MaxPerRun <= 0 {
		w.MaxPerRun = 100_000
	}
	if w.BlobBatch <= 0 {
		w.BlobBatch = 100
	}
	if w.MaxBlobsPerRun <= 0 {
		w.MaxBlobsPerRun = 10_000
	}
	if w.Now == nil {
		w.Now = time.Now
	}
	if w.Logger == nil {
		w.Logger = slog.New(slog.DiscardHandler)
	}
}

// Timeout bounds one run.
func (w *RetentionWorker) Timeout(*river.Job[RetentionArgs]) time.Duration { return 30 * time.Minute }

// Work prunes the inbox, then blobs.
func (w *RetentionWorker) Work(ctx context.Context, _ *river.Job[RetentionArgs]) error {
	w.defaults()
	if _, err := w.PruneInbox(ctx); err != nil {
		return err
	}
	_, err := w.PruneBlobs(ctx)
	return err
}

// PruneInbox drops the archived day partitions past retention, then
// deletes the archived messages left past retention, and
// returns how many messages it removed (a dropped day counts its
// estimated rows).
func (w *RetentionWorker) PruneInbox(ctx context.Context) (int64, error) {
	w.defaults()
	before := w.Now().Add(-w.InboxRetention)
	total, err := w.retireDays(ctx, before)
	if err != nil {
		return total, err
	}
	tenants, err := db.TenantList(ctx, w.Pool)
	if err != nil {
		return total, fmt.Errorf("retention: list tenants: %w", err)
	}
	budget := w.MaxPerRun
	for _, t := range tenants {
		for budget > 0 {
			var n int64
			limit := min(w.BatchSize, budget)
			err := db.InTenantTx(ctx, w.Pool, t.ID, func(tx pgx.Tx) error {
				var err error
				n, err = db.InboxArchivedPrune(ctx, tx, t.ID, before, limit)
				return err
			})
			if err != nil {
				return total, fmt.Errorf("retention: prune inbox of tenant %s: %w", t.ID, err)
			}
			total += n
			budget -= int(n)
			if n < int64(limit) {
				break
			}
		}
	}
	if w.Metrics != nil {
		w.Metrics.RetentionDeleted.WithLabelValues("inbox").Add(float64(total))
	}
	return total, nil
}

// retireDays drops due day partitions, oldest first, until one is not
// due or still holds unarchived messages. A busy inbox (the drop's brief
// lock not granted) ends the run quietly: the next run tries again.
func (w *RetentionWorker) retireDays(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		r, ok, err := db.InboxPartitionRetire(ctx, w.Pool, before)
		if errors.Is(err, db.ErrInboxBusy) {
			w.Logger.Warn("retention: partition drop postponed, mio.inbox busy")
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("retention: retire inbox day: %w", err)
		}
		if !ok {
			return total, nil
		}
		w.Logger.Info("retention: inbox day dropped", "partition", r.Name, "messages", r.Messages, "blobs_released", r.BlobsReleased)
		total += r.Messages
	}
}

// PruneBlobs deletes blobs unreferenced past retention and returns how
// many it deleted.
func (w *RetentionWorker) PruneBlobs(ctx context.Context) (int, error) {
	w.defaults()
	before := w.Now().Add(-w.BlobRetention)
	deleted := 0
	for budget := w.MaxBlobsPerRun; budget > 0; {
		cands, err := db.MediaBlobPruneCandidates(ctx, w.Pool, before, min(w.BlobBatch, budget))
		if err != nil {
			return deleted, fmt.Errorf("retention: blob candidates: %w", err)
		}
		for _, c := range cands {
			ok, err := w.pruneBlob(ctx, c, before)
			if err != nil {
				return deleted, err
			}
			if ok {
				deleted++
			}
		}
		budget -= len(cands)
		if len(cands) < w.BlobBatch {
			break
		}
	}
	if w.Metrics != nil {
		w.Metrics.RetentionDeleted.WithLabelValues("blob").Add(float64(deleted))
	}
	return deleted, nil
}

// pruneBlob deletes one blob if, under its lock, it is still unreferenced
// and old. The lock takes no transaction id, so the store call does not
// hold back consumers; only the final DELETE does, briefly.
func (w *RetentionWorker) pruneBlob(ctx context.Context, c db.MediaBlob, before time.Time) (bool, error) {
	deleted := false
	err := db.InTx(ctx, w.Pool, func(tx pgx.Tx) error {
		if err := db.MediaBlobLock(ctx, tx, c.ContentSHA256); err != nil {
			return err
		}
		b, err := db.MediaBlobGet(ctx, tx, c.ContentSHA256)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if b.Refs > 0 || b.UnreferencedSince == nil || !b.UnreferencedSince.Before(before) {
			return nil // referenced or reserved again meanwhile
		}
		if err := w.Blob.Delete(ctx, b.StorageKey); err != nil {
			return err
		}
		deleted, err = db.MediaBlobDelete(ctx, tx, b.ContentSHA256, before)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("retention: prune blob %s: %w", c.ContentSHA256, err)
	}
	return deleted, nil
}

// AddRetention registers the retention worker and runs it every interval
// (default 1 hour).
func (s *Set) AddRetention(w *RetentionWorker, interval time.Duration) {
	if interval <= 0 {
		interval = time.Hour
	}
	addWorker(s, w, QueueMaintenance, 2)
	s.Periodic = append(s.Periodic, river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return RetentionArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}))
}
