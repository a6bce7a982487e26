package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// DeliveryIDKey returns the install's 32-byte delivery-id key (migration
// 00013): consume tags lease-range delivery ids with it.
func DeliveryIDKey(ctx context.Context, tx DBTX) ([]byte, error) {
	k, err := queries().DeliveryIDKey(ctx, tx)
	return k, translate(err)
}

// LeasedMessage is the message of a live lease and where it came from.
type LeasedMessage struct {
	MessageID      uuid.UUID
	AccountID      uuid.UUID
	ConversationID string
	ThreadID       string
}

// DeliveryLeaseLive locks the live lease of per-message delivery id of
// consumer until tx ends and returns its message's routing. ErrNotFound
// when there is none: expired, settled, or redelivered under another id.
// A lease-range member must first be moved out of its range
// (LeaseMaterializeMembers).
func DeliveryLeaseLive(ctx context.Context, tx DBTX, tenantID uuid.UUID, consumer string, id uuid.UUID) (*LeasedMessage, error) {
	r, err := queries().DeliveryLeaseLive(ctx, tx, &dbsqlc.DeliveryLeaseLiveParams{TenantID: tenantID, ConsumerName: consumer, DeliveryID: &id})
	if err != nil {
		return nil, translate(err)
	}
	return &LeasedMessage{MessageID: r.MessageID, AccountID: r.AccountID, ConversationID: r.ConversationID, ThreadID: r.ThreadID}, nil
}
