package workers

import "github.com/google/uuid"

// SetAfterWrite installs a hook run after a batch's objects are written and
// before its cursor commits (crash simulation).
func (w *ArchiveWorker) SetAfterWrite(f func(tenantID uuid.UUID) error) { w.afterWrite = f }
