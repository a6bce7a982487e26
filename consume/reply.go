package consume

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// ErrLeaseLost: the delivery is no longer leased to the consumer — its
// lease expired, it was settled, or it was redelivered under another id
// (or the id is not one MIO handed out).
var ErrLeaseLost = errors.New("lease lost")

// AckTx acknowledges one delivery of consumer name in the caller's
// transaction tx (scoped to tenantID), so the ack commits or rolls back
// with the caller's other writes (a reply's outbox row). The lease must
// be live: held by this consumer under deliveryID (as Pull handed it
// out) and not expired; otherwise ErrLeaseLost and nothing is changed.
// It returns the delivered message's routing. The delivery stays locked
// until tx ends, so a concurrent settle of the same id waits and then
// finds it gone. After commit, call Acked.
func (s *Service) AckTx(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, name string, deliveryID uuid.UUID) (*db.LeasedMessage, error) {
	c, err := db.ConsumerGet(ctx, tx, tenantID, name)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reply: consumer: %w", err)
	}
	ids, err := s.ids.open(ctx, tenantID, name, []uuid.UUID{deliveryID})
	if err != nil {
		return nil, err
	}
	id := ids[0]
	if id == uuid.Nil {
		return nil, ErrLeaseLost
	}
	// A lease-range member moves out into a per-message lease (same id,
	// same expiry), as for a nak, term or extend; then one row holds it.
	if _, err := db.LeaseMaterializeMembers(ctx, tx, c, ids); err != nil {
		return nil, fmt.Errorf("reply: lease: %w", err)
	}
	m, err := db.DeliveryLeaseLive(ctx, tx, tenantID, name, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrLeaseLost
	}
	if err != nil {
		return nil, fmt.Errorf("reply: lease: %w", err)
	}
	acked, err := db.DeliveryAck(ctx, tx, tenantID, name, ids)
	if err != nil {
		return nil, fmt.Errorf("reply: ack: %w", err)
	}
	if len(acked) != 1 {
		return nil, ErrLeaseLost
	}
	return m, nil
}

// Acked counts an ack committed by the caller of AckTx and wakes waiting
// pullers (the ack may free max_ack_pending room or a conversation).
func (s *Service) Acked(tenantID uuid.UUID) {
	s.count(ActionAck+"ed", 1)
	if s.hub != nil {
		s.hub.Publish(tenantID)
	}
}
