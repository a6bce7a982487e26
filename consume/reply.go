package consume

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// ErrLeaseLost: the delivery is no longer leased to the consumer — its
// lease expired, it was settled, or it was redelivered under another id
// (or the id is not one MIO handed out).
var ErrLeaseLost = errors.New("lease lost")

// AckLiveTx acknowledges deliveries of consumer name in the caller's
// transaction tx (scoped to tenantID), so the acks commit or roll back
// with the caller's other writes (replies' outbox rows). A lease must be
// live — held by this consumer under the id Pull handed out, and not
// expired — to be acknowledged. It returns, per id in order, the
// delivered message's routing, or nil for an id whose lease was not live
// (nothing was written for it). The acknowledged deliveries stay locked
// until tx ends, so a concurrent settle of one waits and then finds it
// gone. After commit, call Acked.
func (s *Service) AckLiveTx(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, name string, deliveryIDs []uuid.UUID) ([]*db.LeasedMessage, error) {
	ids, err := s.ids.open(ctx, tenantID, name, deliveryIDs)
	if err != nil {
		return nil, err
	}
	acked, err := db.AckLive(ctx, tx, tenantID, name, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*db.LeasedMessage, len(ids))
	for i, id := range ids {
		if m, ok := acked[id]; ok && id != uuid.Nil {
			out[i] = &m
			delete(acked, id) // one id asked twice is acknowledged once
		}
	}
	return out, nil
}

// Acked counts n acks committed by the caller of AckLiveTx and wakes
// waiting pullers (an ack may free max_ack_pending room or a
// conversation).
func (s *Service) Acked(tenantID uuid.UUID, n int) {
	s.count(ActionAck+"ed", n)
	if s.hub != nil && n > 0 {
		s.hub.Publish(tenantID)
	}
}
