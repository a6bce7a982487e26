package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// read returns the next events of the stream's window (pos.Lo, hi].
func (b *Bridge) read(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, stream db.BridgeStream, pos db.LogPos, hi string) ([]event, error) {
	if stream == db.BridgeOutbound {
		rows, err := db.BridgeOutboxRead(ctx, tx, tenantID, pos, hi, b.cfg.BatchRows)
		if err != nil {
			return nil, err
		}
		out := make([]event, len(rows))
		for i := range rows {
			if out[i], err = outboundEvent(tenantID, &rows[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	rows, err := db.BridgeInboundRead(ctx, tx, tenantID, stream, pos, hi, b.cfg.BatchRows)
	if err != nil {
		return nil, err
	}
	root := SubjectInbound
	if stream == db.BridgeInboundEnriched {
		root = SubjectInboundEnriched
	}
	out := make([]event, len(rows))
	for i := range rows {
		r := &rows[i]
		data, err := MessageJSON(r.Envelope, r.Raw)
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", r.ID, err)
		}
		out[i] = event{
			subject:     InboundSubject(root, r.ChannelType, r.AccountID, r.ConversationID, r.ID),
			msgID:       MsgID(stream, r.ID.String()),
			channelType: r.ChannelType,
			data:        data,
			at:          r.At,
			pos:         r.Pos,
		}
	}
	return out, nil
}

// MsgID is an event's Nats-Msg-Id: deterministic, so a republished event
// is dropped by JetStream's duplicate window. "<stream>:<key>", the key
// being the message id (inbound, inbound_enriched) or "<outbound id>:<event
// seq>" (outbound, outbound_status).
func MsgID(stream db.BridgeStream, key string) string { return string(stream) + ":" + key }

// MessageJSON is the mio.v1.Message of a stored row as GET
// /v1/messages/{id} returns it (raw included when it is JSON).
func MessageJSON(stored, raw []byte) ([]byte, error) {
	var m envelope.Message
	if err := json.Unmarshal(stored, &m); err != nil {
		return nil, fmt.Errorf("decode envelope: %w", err)
	}
	if len(raw) > 0 && json.Valid(raw) {
		m.Raw = json.RawMessage(raw)
	}
	return json.Marshal(&m)
}

// OutboundEvent is the payload of mio.outbound (event "queued": the send
// was accepted) and mio.outbound_status (every other event of either
// state machine): one entry of GET /v1/outbound/{id}'s timeline with the
// send it belongs to.
type OutboundEvent struct {
	OutboundID     uuid.UUID       `json:"outbound_id"`
	Seq            int64           `json:"seq"`
	TenantID       uuid.UUID       `json:"tenant_id"`
	AccountID      uuid.UUID       `json:"account_id"`
	ChannelType    string          `json:"channel_type"`
	ConversationID string          `json:"conversation_id"`
	Event          string          `json:"event"`
	Machine        string          `json:"machine"`
	State          string          `json:"state"`
	Attempt        int             `json:"attempt"`
	At             time.Time       `json:"at"`
	Detail         json.RawMessage `json:"detail,omitempty"`
}

// outboundAccepted is the event written when a send is accepted.
const outboundAccepted = "queued"

func outboundEvent(tenantID uuid.UUID, r *db.BridgeOutboxEvent) (event, error) {
	e := OutboundEvent{OutboundID: r.OutboxID, Seq: r.Seq, TenantID: tenantID, AccountID: r.AccountID,
		ChannelType: r.ChannelType, ConversationID: r.ConversationID, Event: r.Event, Machine: r.Machine,
		State: r.State, Attempt: r.AttemptNo, At: r.At}
	if len(r.Detail) > 0 {
		e.Detail = json.RawMessage(r.Detail)
	}
	data, err := json.Marshal(&e)
	if err != nil {
		return event{}, err
	}
	root := SubjectOutboundStatus
	if r.Event == outboundAccepted {
		root = SubjectOutbound
	}
	seq := strconv.FormatInt(r.Seq, 10)
	return event{
		subject:     Subject(root, r.ChannelType, r.AccountID.String(), r.ConversationID, r.OutboxID.String()),
		msgID:       MsgID(db.BridgeOutbound, r.OutboxID.String()+":"+seq),
		channelType: r.ChannelType,
		data:        data,
		at:          r.At,
		pos:         r.Pos,
	}, nil
}
