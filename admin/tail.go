package admin

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// tailLookback re-reads messages this far behind the newest one seen: a
// message committed late with an older id still shows (ids already sent
// are skipped).
const tailLookback = 5 * time.Second

// tailPoll is how often the live tail looks for messages when no wake-up
// arrives (other processes' commits reach it through the hub too).
const tailPoll = time.Second

// Tail follows tenantID's inbound messages received from start on, each
// passed once to send (oldest first), until ctx ends or a read fails.
// wake, when not nil, makes it look at once (the notify hub's
// subscription); otherwise it polls every second. The admin API's and the
// console's live tails both run it.
func (s *Service) Tail(ctx context.Context, tenantID uuid.UUID, start time.Time, wake <-chan struct{}, send func([]*db.TailMessage)) error {
	from := start
	sent := map[uuid.UUID]time.Time{}
	tick := time.NewTicker(tailPoll)
	defer tick.Stop()
	for {
		var msgs []*db.TailMessage
		err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
			var err error
			msgs, err = db.InboxTail(ctx, tx, tenantID, db.IDFloor(from.Add(-tailLookback)), 500)
			return err
		})
		if err != nil {
			return err
		}
		fresh := msgs[:0]
		for _, m := range msgs {
			if _, dup := sent[m.ID]; dup || m.ReceivedAt.Before(start) {
				continue
			}
			sent[m.ID] = m.ReceivedAt
			if m.ReceivedAt.After(from) {
				from = m.ReceivedAt
			}
			fresh = append(fresh, m)
		}
		send(fresh)
		for id, at := range sent {
			if at.Before(from.Add(-2 * tailLookback)) {
				delete(sent, id)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-tick.C:
		}
	}
}
