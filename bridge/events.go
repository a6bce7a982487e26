package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// read returns the next events of the stream's window (pos.Lo, hi].
func (b *Bridge) read(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, stream db.BridgeStream, pos db.LogPos, hi string) ([]event, error) {
	if stream == db.BridgeOutbound {
		rows, err := db.BridgeOutboxRead(ctx, tx, tenantID, pos, hi, b.cfg.BatchRows)
		if err != nil {
			return nil, err
		}
		return outboundEvents(ctx, tx, tenantID, rows)
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
		out[i] = event{
			subject:     InboundSubject(root, r.ChannelType, r.AccountID, r.ConversationID, r.ID),
			msgID:       MsgID(stream, r.ID.String()),
			channelType: r.ChannelType,
			// The message as the pull API delivers it: the stored envelope
			// with raw spliced in (decoding and encoding it again took a
			// quarter of the bridge's CPU).
			data: envelope.WithRaw(r.Envelope, r.Raw),
			at:   r.At,
			pos:  r.Pos,
		}
	}
	return out, nil
}

// MsgID is an event's Nats-Msg-Id: deterministic, so a republished event
// is dropped by JetStream's duplicate window. "<stream>:<key>", the key
// being the message id (inbound, inbound_enriched) or "<outbound id>:<event
// seq>" (outbound, outbound_status).
func MsgID(stream db.BridgeStream, key string) string { return string(stream) + ":" + key }

// OutboundEvent is the payload of mio.outbound (event "queued": the send
// was accepted) and mio.outbound_status (every other event of either
// state machine): the send as GET /v1/outbound/{id} shows it when the
// event is published (it may already show later events), plus the
// transition that caused the event.
type OutboundEvent struct {
	*outbox.View
	Transition OutboundTransition `json:"transition"`
}

// OutboundTransition is the timeline entry an outbound event publishes;
// Seq orders the entries of one send.
type OutboundTransition struct {
	Seq int64 `json:"seq"`
	outbox.EventView
}

// outboundAccepted is the event written when a send is accepted.
const outboundAccepted = "queued"

// outboundEvents turns a batch of outbound events into messages, each
// with its send read in tx.
func outboundEvents(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, rows []db.BridgeOutboxEvent) ([]event, error) {
	ids := make([]uuid.UUID, 0, len(rows))
	seen := make(map[uuid.UUID]bool, len(rows))
	for i := range rows {
		if id := rows[i].OutboxID; !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sends, err := db.BridgeOutboxSends(ctx, tx, tenantID, ids)
	if err != nil {
		return nil, fmt.Errorf("read sends: %w", err)
	}
	out := make([]event, len(rows))
	for i := range rows {
		if out[i], err = outboundEvent(sends[rows[i].OutboxID], &rows[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// outboundEvent is the message of one outbound event; send is nil when
// the send is no longer stored (the view then holds its lane only).
func outboundEvent(send *db.OutboxTimeline, r *db.BridgeOutboxEvent) (event, error) {
	view := &outbox.View{ID: r.OutboxID, AccountID: r.AccountID, ChannelType: r.ChannelType, ConversationID: r.ConversationID}
	if send != nil {
		view = outbox.ViewOf(send.Outbound, send.Events)
	}
	e := OutboundEvent{View: view, Transition: OutboundTransition{Seq: r.Seq, EventView: outbox.EventViewOf(db.OutboxEvent{
		ID: r.Seq, Event: r.Event, Machine: r.Machine, State: r.State, AttemptNo: r.AttemptNo, Detail: r.Detail, At: r.At})}}
	data, err := json.Marshal(&e)
	if err != nil {
		return event{}, fmt.Errorf("outbound %s: %w", r.OutboxID, err)
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
