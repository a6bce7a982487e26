package db

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// TailMessage is an inbound message as the admin live tail shows it.
type TailMessage struct {
	ID             uuid.UUID       `json:"id"`
	AccountID      uuid.UUID       `json:"account_id"`
	ChannelType    string          `json:"channel_type"`
	ConversationID string          `json:"conversation_id"`
	State          string          `json:"state"`
	ReceivedAt     time.Time       `json:"received_at"`
	Envelope       json.RawMessage `json:"envelope"`
}

// InboxTail returns up to limit of the tenant's messages with an id above
// afterID, oldest first. Inbox ids are UUIDv7, so IDFloor(t) starts at
// the messages received from t on.
func InboxTail(ctx context.Context, tx DBTX, tenantID, afterID uuid.UUID, limit int) ([]*TailMessage, error) {
	rows, err := queries().InboxTail(ctx, tx, &dbsqlc.InboxTailParams{TenantID: tenantID, AfterID: afterID, MaxRows: int32(limit)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*TailMessage, len(rows))
	for i, r := range rows {
		out[i] = &TailMessage{ID: r.ID, AccountID: r.AccountID, ChannelType: r.ChannelType, ConversationID: r.ConversationID,
			State: r.State, ReceivedAt: r.ReceivedAt, Envelope: r.Envelope}
	}
	return out, nil
}

// IDFloor is the smallest UUIDv7 of time t: every UUIDv7 made at or after
// t (to the millisecond) sorts above or equal to it. Inbox and outbox ids
// are UUIDv7, so it turns a time into a keyset bound.
func IDFloor(t time.Time) uuid.UUID {
	var u uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[0:6], ms[2:8])
	u[6] = 0x70
	u[8] = 0x80
	return u
}
