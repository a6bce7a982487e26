package db

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// DeliveryIDKey returns the install's 32-byte delivery-id key
// (mio.delivery_id_key): consume tags lease-range delivery ids with it.
func DeliveryIDKey(ctx context.Context, tx DBTX) ([]byte, error) {
	k, err := queries().DeliveryIDKey(ctx, tx)
	return k, translate(err)
}

// LeasedMessage is where the message of a live lease came from.
type LeasedMessage struct {
	AccountID      uuid.UUID
	ConversationID string
	ThreadID       string
}

// AckLive acknowledges, in tx (scoped to tenantID), those of consumer's
// delivery ids (in their database form) whose lease is live — lease-range
// members of unexpired ranges and per-message leases not expired — and
// returns the routing of each acknowledged one's message, keyed by
// delivery id (a zero LeasedMessage when retention removed the message).
// An id not returned was unknown, expired, settled or redelivered: nothing
// was written for it. One round trip: the range locks, the range acks and
// the per-message acks are pipelined. Their statements read their values
// through sub-selects no plan can see (queries/agents.sql), so the server
// keeps their generic plans from a connection's sixth ack on, as
// AckAll's, with no plan_cache_mode setting (TestAckLiveKeepsGenericPlans).
func AckLive(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, consumer string, ids []uuid.UUID) (map[uuid.UUID]LeasedMessage, error) {
	acked := make(map[uuid.UUID]LeasedMessage, len(ids))
	routed := func(account *uuid.UUID, conversation *string, thread string) LeasedMessage {
		if account == nil || conversation == nil {
			return LeasedMessage{}
		}
		return LeasedMessage{AccountID: *account, ConversationID: *conversation, ThreadID: thread}
	}
	leases, idxs, _ := splitLeaseIDs(ids)
	b := &pgx.Batch{}
	if len(leases) > 0 {
		b.Queue(dbsqlc.LeaseLock, leases)
		b.Queue(dbsqlc.LeaseAckLive, tenantID, leases, idxs, consumer).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r dbsqlc.LeaseAckLiveRow
				if err := rows.Scan(&r.LeaseID, &r.Idx, &r.AccountID, &r.ConversationID, &r.ThreadID); err != nil {
					return err
				}
				acked[LeaseDeliveryID(r.LeaseID, int(r.Idx))] = routed(r.AccountID, r.ConversationID, r.ThreadID)
			}
			return rows.Err()
		})
	}
	b.Queue(dbsqlc.DeliveryAckLive, tenantID, consumer, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r dbsqlc.DeliveryAckLiveRow
			if err := rows.Scan(&r.DeliveryID, &r.AccountID, &r.ConversationID, &r.ThreadID); err != nil {
				return err
			}
			acked[r.DeliveryID] = routed(r.AccountID, r.ConversationID, r.ThreadID)
		}
		return rows.Err()
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("ack: %w", translate(err))
	}
	return acked, nil
}
