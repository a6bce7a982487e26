package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// PendingReceipt is a delivery receipt not yet applied, with the outbox
// row it reports on (OutboxID uuid.Nil when no sent message matches).
type PendingReceipt struct {
	AccountID         uuid.UUID
	ProviderMessageID string
	Status            string
	OccurredAt        *time.Time
	RecipientID       string
	Error             string
	ReceivedAt        time.Time
	OutboxID          uuid.UUID
	// ChannelType of the matched outbox row ("" when none).
	ChannelType string
}

// ProviderEventPending locks at most maxRows of the tenant's unapplied
// receipts, oldest first.
func ProviderEventPending(ctx context.Context, tx DBTX, tenantID uuid.UUID, maxRows int) ([]PendingReceipt, error) {
	rows, err := queries().ProviderEventPending(ctx, tx, &dbsqlc.ProviderEventPendingParams{TenantID: tenantID, MaxRows: int32(maxRows)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]PendingReceipt, len(rows))
	for i, r := range rows {
		out[i] = PendingReceipt{AccountID: r.AccountID, ProviderMessageID: r.ProviderMessageID, Status: r.Status,
			OccurredAt: r.OccurredAt, RecipientID: r.RecipientID, Error: r.Error, ReceivedAt: r.ReceivedAt, OutboxID: r.OutboxID,
			ChannelType: r.ChannelType}
		if r.OccurredAt != nil && r.OccurredAt.Year() <= 1 {
			out[i].OccurredAt = nil // recorded without a timestamp
		}
	}
	return out, nil
}

// ProviderEventMarkApplied marks receipts applied (or given up on).
func ProviderEventMarkApplied(ctx context.Context, tx DBTX, tenantID uuid.UUID, receipts []PendingReceipt) error {
	p := &dbsqlc.ProviderEventMarkAppliedParams{TenantID: tenantID,
		AccountIds: make([]uuid.UUID, len(receipts)), ProviderMessageIds: make([]string, len(receipts)),
		Statuses: make([]string, len(receipts))}
	for i, r := range receipts {
		p.AccountIds[i], p.ProviderMessageIds[i], p.Statuses[i] = r.AccountID, r.ProviderMessageID, r.Status
	}
	return translate(queries().ProviderEventMarkApplied(ctx, tx, p))
}

// ProviderAdvance is a provider state reported for an outbox row.
type ProviderAdvance struct {
	ID     uuid.UUID
	State  ProviderState
	Detail json.RawMessage
}

// OutboxProviderAdvance applies provider states, each row only moving
// forward by rank, and returns how many rows moved.
func OutboxProviderAdvance(ctx context.Context, tx DBTX, tenantID uuid.UUID, items []ProviderAdvance) (int, error) {
	p := &dbsqlc.OutboxProviderAdvanceParams{TenantID: tenantID,
		Ids: make([]uuid.UUID, len(items)), States: make([]string, len(items)), Details: make([]string, len(items))}
	for i, it := range items {
		p.Ids[i], p.States[i], p.Details[i] = it.ID, string(it.State), string(it.Detail)
	}
	rows, err := queries().OutboxProviderAdvance(ctx, tx, p)
	if err != nil {
		return 0, translate(err)
	}
	return len(rows), nil
}

// TimedOut is a message OutboxTimeOut moved to timed_out.
type TimedOut struct {
	ID          uuid.UUID
	ChannelType string
}

// OutboxTimeOut moves at most maxRows messages past their receipt
// deadline to provider_state timed_out and returns them.
func OutboxTimeOut(ctx context.Context, tx DBTX, tenantID uuid.UUID, maxRows int) ([]TimedOut, error) {
	rows, err := queries().OutboxTimeOut(ctx, tx, &dbsqlc.OutboxTimeOutParams{TenantID: tenantID, MaxRows: int32(maxRows)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]TimedOut, len(rows))
	for i, r := range rows {
		out[i] = TimedOut{ID: r.ID, ChannelType: r.ChannelType}
	}
	return out, nil
}

// Dead letter kinds (mio.dead_letters.kind).
const (
	DeadLetterOutbound = "outbound"
	DeadLetterConsumer = "consumer"
)

// DeadLetter is one row of mio.dead_letters.
type DeadLetter struct {
	Kind        string          `json:"kind"`
	TenantID    uuid.UUID       `json:"tenant_id"`
	ID          uuid.UUID       `json:"id"`
	ChannelType string          `json:"channel_type,omitempty"`
	AccountID   *uuid.UUID      `json:"account_id,omitempty"`
	Attempts    int             `json:"attempts"`
	LastError   string          `json:"last_error,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	DeadAt      *time.Time      `json:"dead_at,omitempty"`
	Detail      json.RawMessage `json:"detail,omitempty"`
}

func deadLetterFrom(r dbsqlc.MioDeadLetter) *DeadLetter {
	d := &DeadLetter{Kind: r.Kind, TenantID: r.TenantID, ID: r.ID, ChannelType: r.ChannelType,
		Attempts: int(r.Attempts), LastError: deref(r.LastError), CreatedAt: r.CreatedAt, DeadAt: r.DeadAt, Detail: r.Detail}
	if r.AccountID != uuid.Nil {
		id := r.AccountID
		d.AccountID = &id
	}
	return d
}

// DeadLetterListParams filter DeadLetterList; zero values do not filter.
type DeadLetterListParams struct {
	Kind        string
	ChannelType string
	Limit       int
}

// DeadLetterList returns the tenant's dead letters, newest first.
func DeadLetterList(ctx context.Context, tx DBTX, tenantID uuid.UUID, p DeadLetterListParams) ([]*DeadLetter, error) {
	q := &dbsqlc.DeadLetterListParams{TenantID: tenantID, MaxRows: int32(p.Limit)}
	if p.Kind != "" {
		q.Kind = &p.Kind
	}
	if p.ChannelType != "" {
		q.ChannelType = &p.ChannelType
	}
	rows, err := queries().DeadLetterList(ctx, tx, q)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*DeadLetter, len(rows))
	for i, r := range rows {
		out[i] = deadLetterFrom(r)
	}
	return out, nil
}

// DeadLetterGet returns the tenant's dead letters with this id (a
// message can be dead for several consumers); ErrNotFound when none.
func DeadLetterGet(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) ([]*DeadLetter, error) {
	rows, err := queries().DeadLetterGet(ctx, tx, &dbsqlc.DeadLetterGetParams{TenantID: tenantID, ID: id})
	if err != nil {
		return nil, translate(err)
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	out := make([]*DeadLetter, len(rows))
	for i, r := range rows {
		out[i] = deadLetterFrom(r)
	}
	return out, nil
}

// DeadLetterRequeue calls mio.requeue(id) in the transaction's tenant and
// returns how many items it requeued (0: not a dead letter).
func DeadLetterRequeue(ctx context.Context, tx DBTX, id uuid.UUID) (int, error) {
	n, err := queries().DeadLetterRequeue(ctx, tx, &dbsqlc.DeadLetterRequeueParams{ID: id})
	return int(n), translate(err)
}

// DeadLetterDiscard calls mio.discard(id) in the transaction's tenant and
// returns how many items it discarded (0: not a dead letter).
func DeadLetterDiscard(ctx context.Context, tx DBTX, id uuid.UUID) (int, error) {
	n, err := queries().DeadLetterDiscard(ctx, tx, &dbsqlc.DeadLetterDiscardParams{ID: id})
	return int(n), translate(err)
}
