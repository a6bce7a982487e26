package bridge

import (
	"github.com/google/uuid"

	"github.com/miohq/mio/db"
)

// SetAfterAcks installs a hook run after a batch's acks and before its
// position advances.
func (b *Bridge) SetAfterAcks(fn func(tenantID uuid.UUID, stream db.BridgeStream) error) {
	b.afterAcks = fn
}

// LockSessionPID is the backend pid of the bridge's lock session.
func (b *Bridge) LockSessionPID() uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lockConn == nil {
		return 0
	}
	return b.lockConn.PgConn().PID()
}
