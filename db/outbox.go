package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// HandoffState is the state of an outbound message's handoff to its
// platform (docs/contract.md §5): queued, sending, then handed_off or dead. The
// values are those of the handoff_state column.
type HandoffState string

// Handoff states, ranked queued(10) < sending(20) < handed_off(100) =
// dead(100) and compared by (attempt_no, rank).
const (
	HandoffQueued    HandoffState = "queued"
	HandoffSending   HandoffState = "sending"
	HandoffHandedOff HandoffState = "handed_off"
	HandoffDead      HandoffState = "dead"
)

// Rank is the state's rank (mio.handoff_rank), -1 for an unknown state.
func (s HandoffState) Rank() int {
	switch s {
	case HandoffQueued:
		return 10
	case HandoffSending:
		return 20
	case HandoffHandedOff, HandoffDead:
		return 100
	}
	return -1
}

// Valid reports whether s is a handoff state.
func (s HandoffState) Valid() bool { return s.Rank() >= 0 }

// Over reports whether the handoff is over (handed_off or dead): nothing
// is in flight, and a resend may start a new attempt series.
func (s HandoffState) Over() bool { return s == HandoffHandedOff || s == HandoffDead }

// ProviderState is what the platform reported about an outbound message
// after the handoff (accepted, delivery receipts). The values are those
// of the provider_state column.
type ProviderState string

// Provider states, ranked unknown(0) < accepted(10) < delivered(50) <
// read(60) < timed_out(90) < bounced = dropped = complaint = failed(100);
// a message's provider state only moves to a higher rank.
const (
	ProviderUnknown   ProviderState = "unknown"
	ProviderAccepted  ProviderState = "accepted"
	ProviderDelivered ProviderState = "delivered"
	ProviderRead      ProviderState = "read"
	ProviderTimedOut  ProviderState = "timed_out"
	ProviderBounced   ProviderState = "bounced"
	ProviderDropped   ProviderState = "dropped"
	ProviderComplaint ProviderState = "complaint"
	ProviderFailed    ProviderState = "failed"
)

// Rank is the state's rank (mio.provider_rank), -1 for an unknown state.
func (s ProviderState) Rank() int {
	switch s {
	case ProviderUnknown:
		return 0
	case ProviderAccepted:
		return 10
	case ProviderDelivered:
		return 50
	case ProviderRead:
		return 60
	case ProviderTimedOut:
		return 90
	case ProviderBounced, ProviderDropped, ProviderComplaint, ProviderFailed:
		return 100
	}
	return -1
}

// Valid reports whether s is a provider state.
func (s ProviderState) Valid() bool { return s.Rank() >= 0 }

// Outbound is one outbox row: an agent's reply and both its states.
type Outbound struct {
	TenantID           uuid.UUID
	ID                 uuid.UUID
	Seq                int64
	AccountID          uuid.UUID
	ChannelType        string
	ConversationID     string
	ThreadID           string
	IdempotencyKey     string
	RequestSHA256      []byte
	Text               string
	RichContent        json.RawMessage
	Attachments        json.RawMessage
	EditOf             *uuid.UUID
	HandoffState       HandoffState
	ProviderState      ProviderState
	AttemptNo          int
	Series             int
	SeriesFirstAttempt int
	Attempts           int
	NextAttemptAt      time.Time
	LeaseUntil         *time.Time
	ProviderMessageID  string
	LastError          string
	ReceiptDueAt       *time.Time
	CreatedAt          time.Time
	UpdatedAt          time.Time
	HandedOffAt        *time.Time
	DeadAt             *time.Time
	DiscardedAt        *time.Time
	// StreamSeq is the number of a stream's last append (0 when opened),
	// nil for a message that is not a stream; StreamFinishedAt is when the
	// stream was finished, nil while it is open.
	StreamSeq        *int
	StreamFinishedAt *time.Time
}

func outboundFrom(r dbsqlc.MioOutbox) *Outbound {
	return &Outbound{
		TenantID: r.TenantID, ID: r.ID, Seq: r.Seq.Int64, AccountID: r.AccountID, ChannelType: r.ChannelType,
		ConversationID: r.ConversationID, ThreadID: r.ThreadID, IdempotencyKey: r.IdempotencyKey,
		RequestSHA256: r.RequestSha256, Text: r.Text, RichContent: r.RichContent, Attachments: r.Attachments,
		EditOf: r.EditOf, HandoffState: HandoffState(r.HandoffState), ProviderState: ProviderState(r.ProviderState),
		AttemptNo: int(r.AttemptNo), Series: int(r.Series), SeriesFirstAttempt: int(r.SeriesFirstAttempt),
		Attempts: int(r.Attempts), NextAttemptAt: r.NextAttemptAt, LeaseUntil: r.LeaseUntil,
		ProviderMessageID: deref(r.ProviderMessageID), LastError: deref(r.LastError), ReceiptDueAt: r.ReceiptDueAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, HandedOffAt: r.HandedOffAt, DeadAt: r.DeadAt,
		DiscardedAt: r.DiscardedAt, StreamSeq: intPtr(r.StreamSeq), StreamFinishedAt: r.StreamFinishedAt,
	}
}

func intPtr(n *int32) *int {
	if n == nil {
		return nil
	}
	v := int(*n)
	return &v
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// NewOutboxID returns a new outbound message id: a time-ordered (version
// 7) UUID, so that outbox rows and their events are appended at the right
// edge of their indexes instead of all over them.
func NewOutboxID() uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.New()
	}
	return id
}

// OutboxNew is a queued send to insert.
type OutboxNew struct {
	ID             uuid.UUID
	AccountID      uuid.UUID
	ChannelType    string
	ConversationID string
	ThreadID       string
	IdempotencyKey string
	RequestSHA256  []byte
	Text           string
	RichContent    json.RawMessage // nil: none
	Attachments    json.RawMessage // nil: none
	// EditOf names the message edited; a row naming itself is a stream,
	// inserted open.
	EditOf *uuid.UUID
	// JobID is the River dispatch job inserted in the same transaction.
	JobID int64
	// Traceparent is the W3C trace context of the request that queued
	// it; "" when not traced.
	Traceparent string
}

// OutboxInserted is a row OutboxInsertBatch inserted.
type OutboxInserted struct {
	ID        uuid.UUID
	CreatedAt time.Time
}

// OutboxInsertBatch inserts queued sends of one tenant, each with its
// first event, and returns those inserted: a row whose idempotency key the
// tenant already used is skipped. The transaction's tenant must be
// tenantID.
func OutboxInsertBatch(ctx context.Context, tx DBTX, tenantID uuid.UUID, rows []OutboxNew) ([]OutboxInserted, error) {
	p := outboxInsertParams(tenantID, rows)
	res, err := queries().OutboxInsertBatch(ctx, tx, p)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]OutboxInserted, len(res))
	for i, r := range res {
		out[i] = OutboxInserted{ID: r.ID, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// outboxInsertParams are OutboxInsertBatch's (and the strict variant's)
// arrays for rows.
func outboxInsertParams(tenantID uuid.UUID, rows []OutboxNew) *dbsqlc.OutboxInsertBatchParams {
	p := &dbsqlc.OutboxInsertBatchParams{
		TenantID:        tenantID,
		Ids:             make([]uuid.UUID, len(rows)),
		AccountIds:      make([]uuid.UUID, len(rows)),
		ChannelTypes:    make([]string, len(rows)),
		ConversationIds: make([]string, len(rows)),
		ThreadIds:       make([]string, len(rows)),
		IdempotencyKeys: make([]string, len(rows)),
		RequestSha256s:  make([][]byte, len(rows)),
		Texts:           make([]string, len(rows)),
		RichContents:    make([]string, len(rows)),
		Attachments:     make([]string, len(rows)),
		EditOfs:         make([]uuid.UUID, len(rows)),
		JobIds:          make([]int64, len(rows)),
		Traceparents:    make([]string, len(rows)),
	}
	for i, r := range rows {
		p.Ids[i], p.AccountIds[i], p.ChannelTypes[i] = r.ID, r.AccountID, r.ChannelType
		p.ConversationIds[i], p.ThreadIds[i], p.IdempotencyKeys[i] = r.ConversationID, r.ThreadID, r.IdempotencyKey
		p.RequestSha256s[i], p.Texts[i] = r.RequestSHA256, r.Text
		p.RichContents[i], p.Attachments[i] = string(r.RichContent), string(r.Attachments)
		if r.EditOf != nil {
			p.EditOfs[i] = *r.EditOf
		}
		p.JobIds[i], p.Traceparents[i] = r.JobID, r.Traceparent
	}
	return p
}

// OutboxTraceparents returns the trace context each of the tenant's
// outbound messages ids was queued under, for those that have one.
func OutboxTraceparents(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	rows, err := queries().OutboxTraceparents(ctx, tx, &dbsqlc.OutboxTraceparentsParams{TenantID: tenantID, Ids: ids})
	if err != nil {
		return nil, translate(err)
	}
	out := make(map[uuid.UUID]string, len(rows))
	for _, r := range rows {
		out[r.ID] = r.Traceparent
	}
	return out, nil
}

// OutboxGet returns one outbound message of the tenant.
func OutboxGet(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) (*Outbound, error) {
	r, err := queries().OutboxGet(ctx, tx, &dbsqlc.OutboxGetParams{TenantID: tenantID, ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return outboundFrom(r), nil
}

// OutboxGetByKey returns the tenant's outbound message with this
// idempotency key.
func OutboxGetByKey(ctx context.Context, tx DBTX, tenantID uuid.UUID, key string) (*Outbound, error) {
	r, err := queries().OutboxGetByKey(ctx, tx, &dbsqlc.OutboxGetByKeyParams{TenantID: tenantID, IdempotencyKey: key})
	if err != nil {
		return nil, translate(err)
	}
	return outboundFrom(r), nil
}

// OutboxGetByKeys returns the tenant's outbound messages holding any of
// these idempotency keys, in no particular order.
func OutboxGetByKeys(ctx context.Context, tx DBTX, tenantID uuid.UUID, keys []string) ([]*Outbound, error) {
	rs, err := queries().OutboxGetByKeys(ctx, tx, &dbsqlc.OutboxGetByKeysParams{TenantID: tenantID, IdempotencyKeys: keys})
	return outboundsFrom(rs, err)
}

// OutboxGetMany returns the tenant's outbound messages among ids, in no
// particular order.
func OutboxGetMany(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID) ([]*Outbound, error) {
	rs, err := queries().OutboxGetMany(ctx, tx, &dbsqlc.OutboxGetManyParams{TenantID: tenantID, Ids: ids})
	return outboundsFrom(rs, err)
}

func outboundsFrom(rs []dbsqlc.MioOutbox, err error) ([]*Outbound, error) {
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Outbound, len(rs))
	for i, r := range rs {
		out[i] = outboundFrom(r)
	}
	return out, nil
}

// OutboxEvent is one entry of an outbound message's timeline.
type OutboxEvent struct {
	ID int64
	// Event says what happened: queued, sending, resumed, rate_limited,
	// retry, handed_off, dead, accepted, receipt, timed_out, resend,
	// requeued, discarded.
	Event string
	// Machine is handoff or provider; State is that machine's state after
	// the event.
	Machine   string
	State     string
	AttemptNo int
	Detail    json.RawMessage
	At        time.Time
}

// OutboxEventList returns an outbound message's events, oldest first.
func OutboxEventList(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) ([]OutboxEvent, error) {
	rows, err := queries().OutboxEventList(ctx, tx, &dbsqlc.OutboxEventListParams{TenantID: tenantID, OutboxID: id})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]OutboxEvent, len(rows))
	for i, r := range rows {
		out[i] = outboxEventFrom(r)
	}
	return out, nil
}

func outboxEventFrom(r dbsqlc.MioOutboxEvent) OutboxEvent {
	return OutboxEvent{ID: r.ID, Event: r.Event, Machine: r.Machine, State: r.State,
		AttemptNo: int(r.AttemptNo), Detail: r.Detail, At: r.At}
}

// OutboxListParams filter OutboxList; zero values do not filter.
type OutboxListParams struct {
	HandoffState   HandoffState
	ProviderState  ProviderState
	AccountID      uuid.UUID
	ConversationID string
	// BeforeID pages: only rows created before this one (uuid.Nil: from
	// the newest). Outbound ids are time-ordered.
	BeforeID uuid.UUID
	Limit    int
}

// OutboxList returns the tenant's outbound messages, newest first.
func OutboxList(ctx context.Context, tx DBTX, tenantID uuid.UUID, p OutboxListParams) ([]*Outbound, error) {
	q := &dbsqlc.OutboxListParams{TenantID: tenantID, BeforeID: p.BeforeID, MaxRows: int32(p.Limit)}
	if p.HandoffState != "" {
		q.HandoffState = (*string)(&p.HandoffState)
	}
	if p.ProviderState != "" {
		q.ProviderState = (*string)(&p.ProviderState)
	}
	if p.AccountID != uuid.Nil {
		q.AccountID = &p.AccountID
	}
	if p.ConversationID != "" {
		q.ConversationID = &p.ConversationID
	}
	rows, err := queries().OutboxList(ctx, tx, q)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Outbound, len(rows))
	for i, r := range rows {
		out[i] = outboundFrom(r)
	}
	return out, nil
}

// OutboxResend starts a new attempt series of a message whose handoff is
// over, dispatched by River job jobID, and returns its first attempt
// number. ErrNotFound: no such message, or its handoff is not over.
func OutboxResend(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, jobID int64) (attemptNo int, err error) {
	r, err := queries().OutboxResend(ctx, tx, &dbsqlc.OutboxResendParams{TenantID: tenantID, ID: id, JobID: jobID})
	if err != nil {
		return 0, translate(err)
	}
	return int(r.AttemptNo), nil
}

// OutboxKeepStats refreshes the outbox's planner statistics when it
// changed a lot since the last ones (mio.outbox_keep_stats) and reports
// whether it did.
func OutboxKeepStats(ctx context.Context, tx DBTX) (bool, error) {
	ok, err := queries().OutboxKeepStats(ctx, tx)
	return ok, translate(err)
}
