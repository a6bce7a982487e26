package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// Inbox states.
const (
	InboxReceived = "received" // attachments still to fetch
	InboxReady    = "ready"
)

// InboxRow is one canonical message to insert.
type InboxRow struct {
	ID              uuid.UUID
	AccountID       uuid.UUID
	ChannelType     string
	SourceMessageID string
	ConversationID  string
	State           string
	// Envelope is the mio.v1.Message JSON without its raw payload.
	Envelope []byte
	Raw      []byte
	// ReceivedAt is MIO's receive time.
	ReceivedAt time.Time
	// PlatformMessageID, when set, records the message in inbound_refs
	// under (account, conversation, platform id) for later edits.
	PlatformMessageID string
	// EditOfPlatformID, on an edit or delete, is the platform id of its
	// original: when stored, its id and source_message_id are merged into
	// the envelope's edit_of.
	EditOfPlatformID string
}

// InboxInsertBatch inserts dedup keys and inbox rows for one tenant in one
// statement and returns the ids actually inserted; rows whose (account,
// source message id) already exists are skipped as redeliveries. The
// transaction's tenant must be tenantID.
func InboxInsertBatch(ctx context.Context, tx DBTX, tenantID uuid.UUID, rows []InboxRow) ([]uuid.UUID, error) {
	sql, args := inboxInsert(tenantID, rows)
	return queryIDs(ctx, tx, sql, args)
}

// queryIDs runs an insert that returns the ids it inserted.
func queryIDs(ctx context.Context, tx DBTX, sql string, args []any) ([]uuid.UUID, error) {
	r, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(r, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, translate(err)
	}
	return ids, nil
}

// inboxInsert returns the statement that inserts rows and its arguments:
// InboxInsertBatchPlain unless a row is an edit naming its original
// (EditOfPlatformID), which needs InboxInsertBatch's look-ups. The plain
// statement's plan has four nodes fewer (two lateral joins, a sort) to set
// up on every execution: ~5 % of PostgreSQL's time an ingest transaction
// of 14 webhooks (mio-bench ingest, pg_stat_statements).
func inboxInsert(tenantID uuid.UUID, rows []InboxRow) (string, []any) {
	n := len(rows)
	ids, accountIDs, receivedAts := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]time.Time, n)
	channelTypes, sourceIDs, conversationIDs := make([]string, n), make([]string, n), make([]string, n)
	states, envelopes, platformIDs := make([]string, n), make([]string, n), make([]string, n)
	raws := make([][]byte, n)
	edits := false
	for i, r := range rows {
		ids[i], accountIDs[i], channelTypes[i] = r.ID, r.AccountID, r.ChannelType
		sourceIDs[i], conversationIDs[i], states[i] = r.SourceMessageID, r.ConversationID, r.State
		envelopes[i], raws[i], receivedAts[i] = string(r.Envelope), r.Raw, r.ReceivedAt
		platformIDs[i] = r.PlatformMessageID
		edits = edits || r.EditOfPlatformID != ""
	}
	// Arguments in dbsqlc's order (its Params structs').
	args := []any{tenantID, ids, accountIDs, channelTypes, sourceIDs, conversationIDs, states, envelopes, raws, receivedAts, platformIDs}
	if !edits {
		return dbsqlc.InboxInsertBatchPlain, args
	}
	editOf := make([]string, n)
	for i, r := range rows {
		editOf[i] = r.EditOfPlatformID
	}
	return dbsqlc.InboxInsertBatch, append(args, editOf)
}

// InboxMessage is a stored inbox row.
type InboxMessage struct {
	TenantID   uuid.UUID
	ID         uuid.UUID
	Seq        int64
	AccountID  uuid.UUID
	State      string
	Envelope   json.RawMessage
	Raw        []byte
	ReceivedAt time.Time
	ReadyAt    *time.Time
	ArchivedAt *time.Time
}

// InboxGet returns one inbox message of the tenant.
func InboxGet(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) (*InboxMessage, error) {
	r, err := queries().InboxGet(ctx, tx, &dbsqlc.InboxGetParams{TenantID: tenantID, ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return &InboxMessage{TenantID: r.TenantID, ID: r.ID, Seq: r.Seq.Int64, AccountID: r.AccountID, State: r.State,
		Envelope: r.Envelope, Raw: r.Raw, ReceivedAt: r.ReceivedAt, ReadyAt: r.ReadyAt, ArchivedAt: r.ArchivedAt}, nil
}

// ProviderEvent is a delivery receipt to record.
type ProviderEvent struct {
	AccountID         uuid.UUID
	ProviderMessageID string
	Status            string
	OccurredAt        *time.Time
	RecipientID       string
	Error             string
	Raw               []byte // JSON object or nil
}

// ProviderEventInsertBatch records receipts, skipping (message, status)
// pairs already recorded; it returns how many were new.
func ProviderEventInsertBatch(ctx context.Context, tx DBTX, tenantID uuid.UUID, events []ProviderEvent) (int64, error) {
	n, err := queries().ProviderEventInsertBatch(ctx, tx, providerEventParams(tenantID, events))
	return n, translate(err)
}

func providerEventParams(tenantID uuid.UUID, events []ProviderEvent) *dbsqlc.ProviderEventInsertBatchParams {
	p := &dbsqlc.ProviderEventInsertBatchParams{
		TenantID:           tenantID,
		AccountIds:         make([]uuid.UUID, len(events)),
		ProviderMessageIds: make([]string, len(events)),
		Statuses:           make([]string, len(events)),
		OccurredAts:        make([]time.Time, len(events)),
		RecipientIds:       make([]string, len(events)),
		Errors:             make([]string, len(events)),
		Raws:               make([]string, len(events)),
	}
	for i, e := range events {
		p.AccountIds[i], p.ProviderMessageIds[i], p.Statuses[i] = e.AccountID, e.ProviderMessageID, e.Status
		if e.OccurredAt != nil {
			p.OccurredAts[i] = *e.OccurredAt
		}
		p.RecipientIds[i], p.Errors[i] = e.RecipientID, e.Error
		raw := e.Raw
		if len(raw) == 0 {
			raw = []byte("null")
		}
		p.Raws[i] = string(raw)
	}
	return p
}

// InboundRefPrune deletes at most maxRows of the tenant's edit references
// (inbound_refs) created before before, returning how many it deleted.
func InboundRefPrune(ctx context.Context, tx DBTX, tenantID uuid.UUID, before time.Time, maxRows int) (int64, error) {
	n, err := queries().InboundRefPrune(ctx, tx, &dbsqlc.InboundRefPruneParams{TenantID: tenantID, Before: before, MaxRows: int32(maxRows)})
	return n, translate(err)
}

// InboundDedupPrune deletes at most maxRows of the tenant's dedup keys
// created before before, returning how many it deleted.
func InboundDedupPrune(ctx context.Context, tx DBTX, tenantID uuid.UUID, before time.Time, maxRows int) (int64, error) {
	n, err := queries().InboundDedupPrune(ctx, tx, &dbsqlc.InboundDedupPruneParams{TenantID: tenantID, Before: before, MaxRows: int32(maxRows)})
	return n, translate(err)
}
