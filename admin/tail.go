package admin

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// tailLookback re-reads messages this far behind the newest one seen: a
// message whose transaction committed late (an older received_at) is
// still shown, once.
const tailLookback = 5 * time.Second

// TailOptions shape a live tail.
type TailOptions struct {
	// Wake, when set, signals new messages of the tenant (notify.Hub);
	// the tail also polls every Poll.
	Wake <-chan struct{}
	// Poll is the polling period. Default 1 s.
	Poll time.Duration
	// Live is called once the tail's start is fixed: messages received
	// from then on are shown.
	Live func()
}

// Tail shows the tenant's inbound messages received from now on, each
// once, in the order they are found, by calling emit, until ctx ends (nil
// then) or a read or emit fails. It is read-only.
func (s *Service) Tail(ctx context.Context, tenantID uuid.UUID, opts TailOptions, emit func(*db.TailMessage) error) error {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	// The start is fixed before the caller can tell anyone the tail is
	// live: a message received right after must not count as older.
	// Microseconds, as received_at is stored.
	start := time.Now().Truncate(time.Microsecond)
	if opts.Live != nil {
		opts.Live()
	}
	from := start
	sent := map[uuid.UUID]time.Time{}
	tick := time.NewTicker(opts.Poll)
	defer tick.Stop()
	for {
		var msgs []*db.TailMessage
		err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
			var err error
			msgs, err = db.InboxTail(ctx, tx, tenantID, db.IDFloor(from.Add(-tailLookback)), 500)
			return err
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if _, dup := sent[m.ID]; dup || m.ReceivedAt.Before(start) {
				continue
			}
			sent[m.ID] = m.ReceivedAt
			if m.ReceivedAt.After(from) {
				from = m.ReceivedAt
			}
			if err := emit(m); err != nil {
				return err
			}
		}
		for id, at := range sent {
			if at.Before(from.Add(-2 * tailLookback)) {
				delete(sent, id)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-opts.Wake:
		case <-tick.C:
		}
	}
}
