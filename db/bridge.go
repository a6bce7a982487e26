package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// BridgeStream names one of the NATS bridge's positions in a tenant's log.
type BridgeStream string

// The bridge's streams.
const (
	// BridgeInbound reads the inbox's received stage (every committed
	// message).
	BridgeInbound BridgeStream = "inbound"
	// BridgeInboundEnriched reads the inbox's ready stage (attachments
	// settled).
	BridgeInboundEnriched BridgeStream = "inbound_enriched"
	// BridgeOutbound reads mio.outbox_events (sends accepted and every
	// transition of both state machines).
	BridgeOutbound BridgeStream = "outbound"
)

// BridgeCursorGet returns the tenant's position on stream (LogStart when
// the bridge never published it).
func BridgeCursorGet(ctx context.Context, tx DBTX, tenantID uuid.UUID, stream BridgeStream) (LogPos, error) {
	r, err := queries().BridgeCursorGet(ctx, tx, &dbsqlc.BridgeCursorGetParams{TenantID: tenantID, Stream: string(stream)})
	if err != nil {
		if err = translate(err); errors.Is(err, ErrNotFound) {
			return LogPos{Lo: LogStart}, nil
		}
		return LogPos{}, err
	}
	x, err := parseXid(r.AfterXid)
	if err != nil {
		return LogPos{}, err
	}
	return logPosFrom(r.LogLo, &r.LogHi, x, r.AfterSeq), nil
}

// BridgeCursorAdvance moves the tenant's position on stream from old to
// next (compare-and-set); false means another bridge moved it first.
func BridgeCursorAdvance(ctx context.Context, tx DBTX, tenantID uuid.UUID, stream BridgeStream, old, next LogPos) (bool, error) {
	n, err := queries().BridgeCursorAdvance(ctx, tx, &dbsqlc.BridgeCursorAdvanceParams{
		TenantID: tenantID, Stream: string(stream),
		NewLo: next.Lo, NewHi: next.hiArg(), NewXid: next.After.xidText(), NewSeq: next.After.Seq,
		OldLo: old.Lo, OldHi: old.hiArg(), OldXid: old.After.xidText(), OldSeq: old.After.Seq,
	})
	if err != nil {
		return false, translate(err)
	}
	return n == 1, nil
}

// BridgeMessage is one inbox message read by the bridge.
type BridgeMessage struct {
	ID             uuid.UUID
	AccountID      uuid.UUID
	ChannelType    string
	ConversationID string
	// Pos is the message's position on the stage read.
	Pos StreamPos
	// Envelope is the stored mio.v1.Message JSON without raw.
	Envelope []byte
	Raw      []byte
	// At is when the message reached the stage (received_at, ready_at).
	At time.Time
}

// BridgeInboundRead returns at most maxRows messages of the tenant's
// inbox stage (BridgeInbound: received, BridgeInboundEnriched: ready) in
// the log window (pos.Lo, hi] after pos.After, in window order. hi must
// have been taken before this statement.
func BridgeInboundRead(ctx context.Context, tx DBTX, tenantID uuid.UUID, stream BridgeStream, pos LogPos, hi string, maxRows int) ([]BridgeMessage, error) {
	var (
		rows []dbsqlc.BridgeInboundReceivedRow
		err  error
	)
	switch stream {
	case BridgeInbound:
		rows, err = queries().BridgeInboundReceived(ctx, tx, &dbsqlc.BridgeInboundReceivedParams{
			TenantID: tenantID, Lo: pos.Lo, Hi: hi, AfterXid: pos.After.xidText(), AfterSeq: pos.After.Seq, MaxRows: int32(maxRows)})
	case BridgeInboundEnriched:
		var ready []dbsqlc.BridgeInboundReadyRow
		ready, err = queries().BridgeInboundReady(ctx, tx, &dbsqlc.BridgeInboundReadyParams{
			TenantID: tenantID, Lo: pos.Lo, Hi: hi, AfterXid: pos.After.xidText(), AfterSeq: pos.After.Seq, MaxRows: int32(maxRows)})
		rows = make([]dbsqlc.BridgeInboundReceivedRow, len(ready))
		for i, r := range ready {
			rows[i] = dbsqlc.BridgeInboundReceivedRow(r) // the same columns
		}
	default:
		return nil, errors.New("db: not an inbox stream: " + string(stream))
	}
	if err != nil {
		return nil, translate(err)
	}
	out := make([]BridgeMessage, len(rows))
	for i, r := range rows {
		x, err := parseXid(r.Xid)
		if err != nil {
			return nil, err
		}
		out[i] = BridgeMessage{ID: r.ID, AccountID: r.AccountID, ChannelType: r.ChannelType, ConversationID: r.ConversationID,
			Pos: StreamPos{Xid: x, Seq: r.Seq.Int64}, Envelope: r.Envelope, Raw: r.Raw, At: r.ReceivedAt}
	}
	return out, nil
}

// BridgeOutboxEvent is one outbound event read by the bridge, with its
// send's lane.
type BridgeOutboxEvent struct {
	OutboxID       uuid.UUID
	Seq            int64 // the event's id: its order among its send's events
	Pos            StreamPos
	Event          string
	Machine        string
	State          string
	AttemptNo      int
	Detail         []byte
	At             time.Time
	AccountID      uuid.UUID
	ChannelType    string
	ConversationID string
}

// BridgeOutboxRead returns at most maxRows of the tenant's outbound
// events in the log window (pos.Lo, hi] after pos.After, in window order.
func BridgeOutboxRead(ctx context.Context, tx DBTX, tenantID uuid.UUID, pos LogPos, hi string, maxRows int) ([]BridgeOutboxEvent, error) {
	rows, err := queries().BridgeOutboxEvents(ctx, tx, &dbsqlc.BridgeOutboxEventsParams{
		TenantID: tenantID, Lo: pos.Lo, Hi: hi, AfterXid: pos.After.xidText(), AfterSeq: pos.After.Seq, MaxRows: int32(maxRows)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]BridgeOutboxEvent, len(rows))
	for i, r := range rows {
		x, err := parseXid(r.Xid)
		if err != nil {
			return nil, err
		}
		out[i] = BridgeOutboxEvent{OutboxID: r.OutboxID, Seq: r.ID, Pos: StreamPos{Xid: x, Seq: r.ID}, Event: r.Event,
			Machine: r.Machine, State: r.State, AttemptNo: int(r.AttemptNo), Detail: r.Detail, At: r.At,
			AccountID: r.AccountID, ChannelType: r.ChannelType, ConversationID: r.ConversationID}
	}
	return out, nil
}

// BridgeTryLock takes, on tx's session, the bridge locks of the tenants
// that no other session holds and returns those tenants (session-level
// advisory locks: hold them on a connection of their own; a lost
// connection releases them).
func BridgeTryLock(ctx context.Context, tx DBTX, tenantIDs []uuid.UUID) ([]uuid.UUID, error) {
	if len(tenantIDs) == 0 {
		return nil, nil
	}
	ids, err := queries().BridgeTryLock(ctx, tx, &dbsqlc.BridgeTryLockParams{TenantIds: tenantIDs})
	return ids, translate(err)
}

// BridgeUnlock releases the tenant's bridge lock held by tx's session.
func BridgeUnlock(ctx context.Context, tx DBTX, tenantID uuid.UUID) error {
	return translate(queries().BridgeUnlock(ctx, tx, &dbsqlc.BridgeUnlockParams{TenantID: tenantID.String()}))
}

// BridgePublishGet reports whether the tenant is published to NATS
// (true unless it opted out).
func BridgePublishGet(ctx context.Context, tx DBTX, tenantID uuid.UUID) (bool, error) {
	ok, err := queries().BridgePublishGet(ctx, tx, &dbsqlc.BridgePublishGetParams{TenantID: tenantID})
	return ok, translate(err)
}

// BridgePublishSet opts the tenant in (true) or out of NATS publishing.
func BridgePublishSet(ctx context.Context, tx DBTX, tenantID uuid.UUID, publish bool) error {
	return translate(queries().BridgePublishSet(ctx, tx, &dbsqlc.BridgePublishSetParams{TenantID: tenantID, Publish: publish}))
}

// OutboxTimeline is an outbound message with its event timeline, oldest
// first.
type OutboxTimeline struct {
	Outbound *Outbound
	Events   []OutboxEvent
}

// BridgeOutboxSends returns the tenant's outbound messages with these ids
// and their timelines, by id (ids not found are missing).
func BridgeOutboxSends(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*OutboxTimeline, error) {
	rows, err := queries().BridgeOutboxGetMany(ctx, tx, &dbsqlc.BridgeOutboxGetManyParams{TenantID: tenantID, Ids: ids})
	if err != nil {
		return nil, translate(err)
	}
	out := make(map[uuid.UUID]*OutboxTimeline, len(rows))
	for _, r := range rows {
		out[r.ID] = &OutboxTimeline{Outbound: outboundFrom(r)}
	}
	events, err := queries().BridgeOutboxEventListMany(ctx, tx, &dbsqlc.BridgeOutboxEventListManyParams{TenantID: tenantID, Ids: ids})
	if err != nil {
		return nil, translate(err)
	}
	for _, e := range events {
		if t := out[e.OutboxID]; t != nil {
			t.Events = append(t.Events, outboxEventFrom(e))
		}
	}
	return out, nil
}
