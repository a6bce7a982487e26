package top

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// deadLimit is how many of the newest dead letters a snapshot reads.
const deadLimit = 50

// Snapshot is one refresh: everything read from the admin API at once.
type Snapshot struct {
	At time.Time
	// TenantID is the tenant the snapshot was read for; "" every tenant.
	TenantID  string
	Tenants   []Tenant
	Consumers []Consumer // by backlog, largest first (SortByBacklog)
	Queues    []Queue
	Dead      []DeadLetter // newest first
	// Counters are the admin listener's process's counters per channel
	// (all tenants: the metrics carry no tenant).
	Counters map[string]Counts
}

// Snapshot reads the tenants, queue health, newest dead letters and
// counters, the consumers and dead letters of tenantID only when it is
// not "".
func (c *Client) Snapshot(ctx context.Context, tenantID string) (*Snapshot, error) {
	s := &Snapshot{TenantID: tenantID}
	var err error
	if s.Tenants, err = c.Tenants(ctx); err != nil {
		return nil, err
	}
	if s.Consumers, s.Queues, err = c.QueueHealth(ctx, tenantID); err != nil {
		return nil, err
	}
	if s.Dead, err = c.DeadLetters(ctx, tenantID, deadLimit); err != nil {
		return nil, err
	}
	if s.Counters, err = c.Counters(ctx); err != nil {
		return nil, err
	}
	SortByBacklog(s.Consumers)
	s.At = time.Now()
	return s, nil
}

// SortByBacklog orders consumers by pending, largest first; then by the
// age of their oldest pending message, oldest first; then by tenant and
// name.
func SortByBacklog(cs []Consumer) {
	slices.SortStableFunc(cs, func(a, b Consumer) int {
		return cmp.Or(cmp.Compare(b.Pending, a.Pending), cmp.Compare(b.OldestPendingAge, a.OldestPendingAge),
			cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.Name, b.Name))
	})
}

// tenantName is the tenant's name, or its id when the snapshot does not
// know it.
func (s *Snapshot) tenantName(id string) string {
	if s != nil {
		for _, t := range s.Tenants {
			if t.ID == id {
				return t.Name
			}
		}
	}
	return id
}
