package workers

import (
	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
)

// SetAfterWrite installs a hook run after a batch's objects are written and
// before its cursor commits (crash simulation).
func (w *ArchiveWorker) SetAfterWrite(f func(tenantID uuid.UUID) error) { w.afterWrite = f }

// SetSpoolMemory sets how much of an object a batch keeps in memory
// before it spools the object to a temporary file.
func (w *ArchiveWorker) SetSpoolMemory(n int) { w.spoolMemory = n }

// SetAfterLock installs a hook run in a pass that took the sweeper's
// lock, before it sweeps.
func (s *OutboxSweeper) SetAfterLock(f func()) { s.afterLock = f }

// HistoryBucket is the bucket the reconciler's history calls of an
// account of ch take from: its key, rate and burst.
func HistoryBucket(ch channels.Channel, accountID uuid.UUID) (key string, rate, burst float64) {
	w := historyBucket(ch, accountID)
	return w.Key, w.Rate, w.Burst
}

// JobMiddleware is the River middleware NewClient installs for tp.
var JobMiddleware = jobMiddleware
