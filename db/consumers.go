package db

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// Consumer deliver policies, orderings and stages.
const (
	DeliverAll         = "all"
	DeliverNew         = "new"
	DeliverByStartTime = "by_start_time"
	OrderingNone       = "none"
	OrderingConvo      = "conversation"
	StageReady         = "ready"
	StageReceived      = "received"
)

// StreamPos is a position in a stage's stream: (transaction id, sequence).
type StreamPos struct {
	Xid uint64
	Seq int64
}

// Consumer is a durable consumer's configuration and cursor.
type Consumer struct {
	TenantID              uuid.UUID
	Name                  string
	FilterChannelTypes    []string
	FilterAccountIDs      []uuid.UUID
	FilterConversationIDs []string
	DeliverPolicy         string
	StartTime             *time.Time
	AckWait               time.Duration
	MaxDeliver            int
	MaxAckPending         int
	Ordering              string
	Stage                 string
	// Pos is the consumer's position in the log.
	Pos LogPos
	// Swept: every lease range of the consumer with an id up to it is
	// settled; ranges are only looked at above it.
	Swept int64
	// Taken counts the matching stream rows the position has read
	// (appended with it; docs/architecture.md, "Exact backlog").
	Taken           int64
	LastDeliveredAt *time.Time
	// posWrittenAt is when the position was last appended (the epoch when
	// it is the consumer row's own).
	posWrittenAt time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func consumerFrom(r dbsqlc.ConsumerGetRow) *Consumer {
	return &Consumer{
		TenantID: r.TenantID, Name: r.Name, FilterChannelTypes: r.FilterChannelTypes, FilterAccountIDs: r.FilterAccountIds,
		FilterConversationIDs: r.FilterConversationIds, DeliverPolicy: r.DeliverPolicy, StartTime: r.StartTime,
		AckWait: time.Duration(r.AckWaitMs) * time.Millisecond, MaxDeliver: int(r.MaxDeliver), MaxAckPending: int(r.MaxAckPending),
		Ordering: r.Ordering, Stage: r.Stage, Pos: logPosFrom(r.LogLo, &r.LogHi, r.CursorXid.Uint64, r.CursorSeq),
		Swept: r.Swept, Taken: r.Taken, LastDeliveredAt: r.LastDeliveredAt, posWrittenAt: r.PositionWrittenAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// ConsumerUpsert creates or updates a consumer (c.TenantID, c.Name). The
// deliver policy, start time and stage are fixed at creation; an update
// changes the rest and never moves the cursor. created reports a creation.
func ConsumerUpsert(ctx context.Context, tx DBTX, c *Consumer) (out *Consumer, created bool, err error) {
	r, err := queries().ConsumerUpsert(ctx, tx, &dbsqlc.ConsumerUpsertParams{
		TenantID: c.TenantID, Name: c.Name, FilterChannelTypes: nonNil(c.FilterChannelTypes),
		FilterAccountIds: nonNilUUIDs(c.FilterAccountIDs), FilterConversationIds: nonNil(c.FilterConversationIDs),
		DeliverPolicy: c.DeliverPolicy, StartTime: c.StartTime, AckWaitMs: c.AckWait.Milliseconds(),
		MaxDeliver: int32(c.MaxDeliver), MaxAckPending: int32(c.MaxAckPending), Ordering: c.Ordering, Stage: c.Stage,
	})
	if err != nil {
		return nil, false, translate(err)
	}
	if !r.Created {
		// The row's position columns are only a base:
		// an existing consumer's position is its newest appended one.
		out, err := ConsumerGet(ctx, tx, c.TenantID, c.Name)
		return out, false, err
	}
	return consumerFrom(dbsqlc.ConsumerGetRow{
		TenantID: r.TenantID, Name: r.Name, FilterChannelTypes: r.FilterChannelTypes, FilterAccountIds: r.FilterAccountIds,
		FilterConversationIds: r.FilterConversationIds, DeliverPolicy: r.DeliverPolicy, StartTime: r.StartTime,
		AckWaitMs: r.AckWaitMs, MaxDeliver: r.MaxDeliver, MaxAckPending: r.MaxAckPending, Ordering: r.Ordering,
		Stage: r.Stage, CursorXid: r.CursorXid, CursorSeq: r.CursorSeq, LogLo: r.LogLo, LogHi: r.LogHi, LastDeliveredAt: r.LastDeliveredAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Swept: r.Swept, PositionWrittenAt: r.PositionWrittenAt, Taken: r.Taken,
	}), r.Created, nil
}

// ConsumerGet returns a consumer.
func ConsumerGet(ctx context.Context, tx DBTX, tenantID uuid.UUID, name string) (*Consumer, error) {
	r, err := queries().ConsumerGet(ctx, tx, &dbsqlc.ConsumerGetParams{TenantID: tenantID, Name: name})
	if err != nil {
		return nil, translate(err)
	}
	return consumerFrom(r), nil
}

// ConsumerDelete deletes a consumer and its deliveries.
func ConsumerDelete(ctx context.Context, tx DBTX, tenantID uuid.UUID, name string) error {
	n, err := queries().ConsumerDelete(ctx, tx, &dbsqlc.ConsumerDeleteParams{TenantID: tenantID, Name: name})
	if err != nil {
		return translate(err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// ConsumerList lists the tenant's consumers.
func ConsumerList(ctx context.Context, tx DBTX, tenantID uuid.UUID) ([]*Consumer, error) {
	rows, err := queries().ConsumerList(ctx, tx, &dbsqlc.ConsumerListParams{TenantID: tenantID})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Consumer, len(rows))
	for i, r := range rows {
		out[i] = consumerFrom(dbsqlc.ConsumerGetRow(r))
	}
	return out, nil
}

// ConsumerPage returns a keyset page of the tenant's consumers, by name,
// after the name after.
func ConsumerPage(ctx context.Context, tx DBTX, tenantID uuid.UUID, after string, limit int) ([]*Consumer, error) {
	rows, err := queries().ConsumerPage(ctx, tx, &dbsqlc.ConsumerPageParams{TenantID: tenantID, AfterName: after, MaxRows: int32(limit)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Consumer, len(rows))
	for i, r := range rows {
		out[i] = consumerFrom(dbsqlc.ConsumerGetRow(r))
	}
	return out, nil
}

// ConsumerAdvance appends a consumer's log position, sweep and taken count
// (a pull never updates a row) and, when delivered,
// stamps its last delivery time.
func ConsumerAdvance(ctx context.Context, tx DBTX, c *Consumer, to LogPos, delivered bool) error {
	return translate(queries().ConsumerAdvance(ctx, tx, &dbsqlc.ConsumerAdvanceParams{
		TenantID: c.TenantID, Name: c.Name, LogLo: to.Lo, LogHi: to.hiArg(), CursorXid: to.After.xid8(), CursorSeq: to.After.Seq,
		Swept: c.Swept, Delivered: delivered, LastDeliveredAt: c.LastDeliveredAt, Taken: c.Taken}))
}

// positionRefresh is how old a stored position may grow before a pull
// that read nothing stores its moved window anyway. A pull that read no
// row may leave its position as it was (re-reading from there finds the
// same nothing and more), so an idle consumer polling in a busy cluster
// appends at most one position a second instead of one per poll.
const positionRefresh = time.Second

// positionDue reports whether a pull of c that read no row should still
// append its position: its sweep moves to swept, or the stored position
// is older than positionRefresh.
func (c *Consumer) positionDue(swept int64, now time.Time) bool {
	return c.Swept != swept || now.Sub(c.posWrittenAt) > positionRefresh
}

// StreamRow is one message in a stage's stream.
type StreamRow struct {
	MessageID      uuid.UUID
	Pos            StreamPos
	MessageSeq     int64
	AccountID      uuid.UUID
	ConversationID string
}

// StreamNext returns up to max rows of the consumer's stage in its log
// window after its position that match its filter, and the window's hi:
// the open window's, else a snapshot read by a statement of its own
// BEFORE the rows, so every row of a transaction that hi sees as committed
// is visible to the row query.
func StreamNext(ctx context.Context, tx DBTX, c *Consumer, max int) ([]StreamRow, string, error) {
	hi := c.Pos.Hi
	if hi == "" {
		var err error
		if hi, err = SnapshotNow(ctx, tx); err != nil {
			return nil, "", err
		}
	}
	var out []StreamRow
	p := c.Pos
	if c.Stage == StageReceived {
		rows, err := queries().StreamReceived(ctx, tx, &dbsqlc.StreamReceivedParams{
			TenantID: c.TenantID, Lo: p.Lo, Hi: hi, CursorXid: p.After.xid8(), CursorSeq: p.After.Seq, ChannelTypes: nonNil(c.FilterChannelTypes),
			AccountIds: nonNilUUIDs(c.FilterAccountIDs), ConversationIds: nonNil(c.FilterConversationIDs),
			StartTime: c.StartTime, MaxRows: int32(max)})
		if err != nil {
			return nil, "", translate(err)
		}
		for _, r := range rows {
			out = append(out, StreamRow{MessageID: r.ID, Pos: StreamPos{Xid: r.Xid.Uint64, Seq: r.Seq.Int64}, MessageSeq: r.MessageSeq.Int64, AccountID: r.AccountID, ConversationID: r.ConversationID})
		}
		return out, hi, nil
	}
	rows, err := queries().StreamReady(ctx, tx, &dbsqlc.StreamReadyParams{
		TenantID: c.TenantID, Lo: p.Lo, Hi: hi, CursorXid: p.After.xid8(), CursorSeq: p.After.Seq, ChannelTypes: nonNil(c.FilterChannelTypes),
		AccountIds: nonNilUUIDs(c.FilterAccountIDs), ConversationIds: nonNil(c.FilterConversationIDs),
		StartTime: c.StartTime, MaxRows: int32(max)})
	if err != nil {
		return nil, "", translate(err)
	}
	for _, r := range rows {
		out = append(out, StreamRow{MessageID: r.ID, Pos: StreamPos{Xid: r.Xid.Uint64, Seq: r.Seq.Int64}, MessageSeq: r.MessageSeq.Int64, AccountID: r.AccountID, ConversationID: r.ConversationID})
	}
	return out, hi, nil
}

// Delivery is a leased message handed to a puller.
type Delivery struct {
	MessageID     uuid.UUID
	DeliveryID    uuid.UUID
	DeliveryCount int
	MessageSeq    int64
}

// DeliveryInsert takes stream rows into the consumer, leased at once when
// lease is true (ordering none) or pending. Rows already taken are
// skipped. Leased rows are returned.
func DeliveryInsert(ctx context.Context, tx DBTX, c *Consumer, rows []StreamRow, lease bool) ([]Delivery, error) {
	p := &dbsqlc.DeliveryInsertBatchParams{
		TenantID: c.TenantID, ConsumerName: c.Name, Lease: lease, AckWait: interval(c.AckWait),
		MessageIds: make([]uuid.UUID, len(rows)), MessageSeqs: make([]int64, len(rows)), ConversationKeys: make([]string, len(rows)),
	}
	for i, r := range rows {
		p.MessageIds[i] = r.MessageID
		p.MessageSeqs[i], p.ConversationKeys[i] = r.MessageSeq, r.AccountID.String()+":"+r.ConversationID
	}
	res, err := queries().DeliveryInsertBatch(ctx, tx, p)
	if err != nil {
		return nil, translate(err)
	}
	var out []Delivery
	for _, r := range res {
		if r.DeliveryID != nil {
			out = append(out, Delivery{MessageID: r.MessageID, DeliveryID: *r.DeliveryID, DeliveryCount: int(r.DeliveryCount), MessageSeq: r.MessageSeq})
		}
	}
	return out, nil
}

// DeliveryPendingCount counts deliveries waiting (not leased).
func DeliveryPendingCount(ctx context.Context, tx DBTX, c *Consumer) (int, error) {
	n, err := queries().DeliveryPendingCount(ctx, tx, &dbsqlc.DeliveryPendingCountParams{TenantID: c.TenantID, ConsumerName: c.Name})
	return int(n), translate(err)
}

// DeliveryExhaust dead-letters due deliveries that used up max_deliver.
func DeliveryExhaust(ctx context.Context, tx DBTX, c *Consumer) (int64, error) {
	n, err := queries().DeliveryExhaust(ctx, tx, &dbsqlc.DeliveryExhaustParams{TenantID: c.TenantID, ConsumerName: c.Name, MaxDeliver: int32(c.MaxDeliver)})
	return n, translate(err)
}

// DeliveryClaim leases up to max due deliveries: for ordering none the
// oldest due ones; for ordering conversation only conversation heads.
func DeliveryClaim(ctx context.Context, tx DBTX, c *Consumer, max int) ([]Delivery, error) {
	var out []Delivery
	if c.Ordering == OrderingConvo {
		rows, err := queries().DeliveryClaimHeads(ctx, tx, &dbsqlc.DeliveryClaimHeadsParams{AckWait: interval(c.AckWait), TenantID: c.TenantID, ConsumerName: c.Name, MaxRows: int32(max)})
		if err != nil {
			return nil, translate(err)
		}
		for _, r := range rows {
			out = append(out, Delivery{MessageID: r.MessageID, DeliveryID: *r.DeliveryID, DeliveryCount: int(r.DeliveryCount), MessageSeq: r.MessageSeq})
		}
		return out, nil
	}
	rows, err := queries().DeliveryClaimDue(ctx, tx, &dbsqlc.DeliveryClaimDueParams{AckWait: interval(c.AckWait), TenantID: c.TenantID, ConsumerName: c.Name, MaxRows: int32(max)})
	if err != nil {
		return nil, translate(err)
	}
	for _, r := range rows {
		out = append(out, Delivery{MessageID: r.MessageID, DeliveryID: *r.DeliveryID, DeliveryCount: int(r.DeliveryCount), MessageSeq: r.MessageSeq})
	}
	return out, nil
}

// DeliveryAck deletes acknowledged leases and returns the delivery ids
// that matched a live lease.
func DeliveryAck(ctx context.Context, tx DBTX, tenantID uuid.UUID, consumer string, ids []uuid.UUID) ([]uuid.UUID, error) {
	got, err := queries().DeliveryAck(ctx, tx, &dbsqlc.DeliveryAckParams{TenantID: tenantID, ConsumerName: consumer, DeliveryIds: ids})
	return derefUUIDs(got), translate(err)
}

// DeliveryNak returns leases to pending after delay.
func DeliveryNak(ctx context.Context, tx DBTX, tenantID uuid.UUID, consumer string, ids []uuid.UUID, delay time.Duration) ([]uuid.UUID, error) {
	got, err := queries().DeliveryNak(ctx, tx, &dbsqlc.DeliveryNakParams{Delay: interval(delay), TenantID: tenantID, ConsumerName: consumer, DeliveryIds: ids})
	return derefUUIDs(got), translate(err)
}

// DeliveryTerm dead-letters leases with a reason.
func DeliveryTerm(ctx context.Context, tx DBTX, tenantID uuid.UUID, consumer string, ids []uuid.UUID, reason string) ([]uuid.UUID, error) {
	got, err := queries().DeliveryTerm(ctx, tx, &dbsqlc.DeliveryTermParams{Reason: reason, TenantID: tenantID, ConsumerName: consumer, DeliveryIds: ids})
	return derefUUIDs(got), translate(err)
}

// DeliveryExtend renews leases for another ack wait.
func DeliveryExtend(ctx context.Context, tx DBTX, c *Consumer, ids []uuid.UUID) ([]uuid.UUID, error) {
	got, err := queries().DeliveryExtend(ctx, tx, &dbsqlc.DeliveryExtendParams{AckWait: interval(c.AckWait), TenantID: c.TenantID, ConsumerName: c.Name, DeliveryIds: ids})
	return derefUUIDs(got), translate(err)
}

// ConsumerStats are a consumer's live counts.
type ConsumerStats struct {
	Pending          int64
	AckPending       int64
	Redelivered      int64
	Dead             int64
	OldestPendingAge time.Duration
}

// InboxGetMany returns messages by id (envelope and raw).
func InboxGetMany(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*InboxMessage, error) {
	rows, err := queries().InboxGetMany(ctx, tx, &dbsqlc.InboxGetManyParams{TenantID: tenantID, Ids: ids})
	if err != nil {
		return nil, translate(err)
	}
	out := make(map[uuid.UUID]*InboxMessage, len(rows))
	for _, r := range rows {
		out[r.ID] = &InboxMessage{TenantID: tenantID, ID: r.ID, Envelope: r.Envelope, Raw: r.Raw}
	}
	return out, nil
}

func interval(d time.Duration) pgtype.Interval {
	return pgtype.Interval{Microseconds: d.Microseconds(), Valid: true}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilUUIDs(s []uuid.UUID) []uuid.UUID {
	if s == nil {
		return []uuid.UUID{}
	}
	return s
}

func derefUUIDs(in []*uuid.UUID) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(in))
	for _, p := range in {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}

// ConsumerHealthMany returns the statistics of the tenant's consumers
// named, by name, in one statement: their rows of mio.queue_health, so
// Pending is the same exact count the view, the APIs and the lag gauge
// show (stream messages not taken yet plus deliveries waiting).
func ConsumerHealthMany(ctx context.Context, tx DBTX, tenantID uuid.UUID, names []string) (map[string]*ConsumerStats, error) {
	rows, err := queries().ConsumerHealthMany(ctx, tx, &dbsqlc.ConsumerHealthManyParams{TenantID: tenantID, Names: names})
	if err != nil {
		return nil, translate(err)
	}
	out := make(map[string]*ConsumerStats, len(rows))
	for _, r := range rows {
		out[r.Name] = &ConsumerStats{Pending: r.Pending, AckPending: r.AckPending, Redelivered: r.Redelivered, Dead: r.Dead,
			OldestPendingAge: time.Duration(r.OldestPendingAgeSeconds * float64(time.Second))}
	}
	return out, nil
}

// ConsumerRebase makes a consumer's backlog counters agree with its
// position by counting its unread messages once, row by row (after a seek
// or a filter change). The caller's transaction must hold the consumer's
// row lock from an earlier statement.
func ConsumerRebase(ctx context.Context, tx DBTX, tenantID uuid.UUID, name string) error {
	_, err := queries().ConsumerRebase(ctx, tx, &dbsqlc.ConsumerRebaseParams{TenantID: tenantID, Name: name})
	return translate(err)
}

// StreamCountsFold folds the streams' count deltas into one row per
// tenant, stage, channel type and account and returns
// how many rows it folded away. It runs in a transaction of its own.
func StreamCountsFold(ctx context.Context, pool *pgxpool.Pool) (n int64, err error) {
	err = InTx(ctx, pool, func(tx pgx.Tx) error {
		n, err = StreamCountsFoldTx(ctx, tx)
		return err
	})
	return n, translate(err)
}

// StreamCountsFoldTx is StreamCountsFold in tx: every tenant in id order
// (concurrent folds meet their rows in the same order), each under its
// own tenant setting, all in one round trip after the tenants are read. It
// leaves tx without a tenant.
func StreamCountsFoldTx(ctx context.Context, tx pgx.Tx) (int64, error) {
	ids, err := queries().TenantIDs(ctx, tx)
	if err != nil {
		return 0, translate(err)
	}
	var total int64
	b := &pgx.Batch{}
	for _, id := range ids {
		b.Queue(setTenantSQL, id.String())
		b.Queue(dbsqlc.StreamCountsFoldTenant, id).QueryRow(func(row pgx.Row) error {
			var n int64
			err := row.Scan(&n)
			total += n
			return err
		})
	}
	b.Queue(setTenantSQL, "")
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("stream counts fold: %w", translate(err))
	}
	return total, nil
}

// PullState is what a pull reads before claiming.
type PullState struct {
	Leased        int    // live leases, per message and in lease ranges
	Due           bool   // per-message deliveries due again (nak delay over, lease expired)
	Ranges        bool   // lease ranges outstanding
	RangesExpired bool   // lease ranges expired
	Hi            string // the window's end: the open window's, else a snapshot taken under the row lock
}
