package consume

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// fullPathRecheck is how long a consumer found ordered (or on the received
// stage) skips the one-round-trip pull before it is tried again: a config
// change to ordering none is picked up within it. The attempt costs an
// ordered consumer one extra round trip, and writes nothing.
const fullPathRecheck = 30 * time.Second

type consumerKey struct {
	tenant uuid.UUID
	name   string
}

// fullPathHints remembers, per consumer, until when its pulls go straight
// to the full path.
type fullPathHints struct {
	mu    sync.Mutex
	until map[consumerKey]time.Time
}

func newFullPathHints() *fullPathHints {
	return &fullPathHints{until: map[consumerKey]time.Time{}}
}

func (h *fullPathHints) skip(tenant uuid.UUID, name string) bool {
	k := consumerKey{tenant, name}
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.until[k]
	if !ok {
		return false
	}
	if time.Now().After(t) {
		delete(h.until, k)
		return false
	}
	return true
}

func (h *fullPathHints) remember(tenant uuid.UUID, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until[consumerKey{tenant, name}] = time.Now().Add(fullPathRecheck)
}
