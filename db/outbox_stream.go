package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// Stream events of the outbox timeline.
const (
	EventStreamOpened   = "stream_opened"
	EventStreamEdited   = "stream_edited"
	EventStreamFinished = "stream_finished"
	EventStreamTimedOut = "stream_timed_out"
)

// StreamState is a stream's state as an append or finish that did not
// take finds it.
type StreamState struct {
	// Seq is the number of the last append taken, nil when the message
	// is not a stream.
	Seq *int
	// Finished: the stream takes no more appends.
	Finished  bool
	TextBytes int
}

// OutboxStreamAppendCommit appends delta to the open stream id of the
// tenant as append seq, when its last append was seq-1 and the text
// stays within maxBytes, as one transaction in one round trip (the tenant
// setting and the statement pipelined: appends come several times a
// second per stream); ok is false when it did not take (OutboxStreamGet
// tells why). It is OutboxStreamAppendMany of one append.
func OutboxStreamAppendCommit(ctx context.Context, pool *pgxpool.Pool, tenantID, id uuid.UUID, seq int, delta string, maxBytes int) (ok bool, err error) {
	oks, err := OutboxStreamAppendMany(ctx, pool, []StreamAppend{{TenantID: tenantID, ID: id, Seq: seq, Delta: delta}}, maxBytes)
	if err != nil {
		return false, err
	}
	return oks[0], nil
}

// StreamAppend is one append of OutboxStreamAppendMany: Delta to stream
// ID of TenantID as append Seq.
type StreamAppend struct {
	TenantID, ID uuid.UUID
	Seq          int
	Delta        string
}

// OutboxStreamAppendMany does appends, in their order, as
// OutboxStreamAppendCommit does one, all in ONE transaction and one round
// trip: a tenant setting before each append whose tenant is not the one
// before it, and one OutboxStreamAppend per append, pipelined up to one
// Sync. ok[i] is appends[i]'s: an append that does not take changes
// nothing and fails none of the others, and appends to one stream take
// one after the other (seq 4 after seq 3 of the same batch). An error is
// the transaction's: nothing was written.
func OutboxStreamAppendMany(ctx context.Context, pool *pgxpool.Pool, appends []StreamAppend, maxBytes int) (ok []bool, err error) {
	ok = make([]bool, len(appends))
	if len(appends) == 0 {
		return ok, nil
	}
	b := &pgx.Batch{}
	var tenant uuid.UUID
	for i, a := range appends {
		if a.TenantID == uuid.Nil {
			return nil, fmt.Errorf("stream append: %w", ErrNoTenant)
		}
		if a.TenantID != tenant {
			tenant = a.TenantID
			b.Queue(setTenantSQL, tenant.String())
		}
		b.Queue(dbsqlc.OutboxStreamAppend, a.Delta, int32(a.Seq), a.TenantID, a.ID, int32(maxBytes)).Query(func(rows pgx.Rows) error {
			ok[i] = rows.Next()
			rows.Close()
			return rows.Err()
		})
	}
	if err := sendPipeline(ctx, pool, b); err != nil {
		return nil, fmt.Errorf("stream append: %w", err)
	}
	return ok, nil
}

// OutboxStreamGet returns the state of message id as a stream; ErrNotFound
// when the tenant has no such message.
func OutboxStreamGet(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) (*StreamState, error) {
	r, err := queries().OutboxStreamGet(ctx, tx, &dbsqlc.OutboxStreamGetParams{TenantID: tenantID, ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return &StreamState{Seq: intPtr(r.StreamSeq), Finished: r.StreamFinishedAt != nil, TextBytes: int(r.TextBytes)}, nil
}

// OutboxStreamFinish finishes the open stream id when its last append was
// seq (0: any): text, when not nil, replaces the text so far; rich, when
// not nil, becomes the message's rich content. ok is false when it did not
// take (OutboxStreamGet tells why).
func OutboxStreamFinish(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, seq int, text *string, rich json.RawMessage) (ok bool, err error) {
	_, err = queries().OutboxStreamFinish(ctx, tx, &dbsqlc.OutboxStreamFinishParams{
		TenantID: tenantID, ID: id, Seq: int32(seq), Text: text, RichContent: rich})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(err)
	}
	return true, nil
}

// StreamLook is what the dispatcher reads of a stream it sends.
type StreamLook struct {
	Text        string
	RichContent json.RawMessage
	Seq         int
	Finished    bool
}

// StreamPollParams are OutboxStreamPoll's.
type StreamPollParams struct {
	TenantID, ID uuid.UUID
	AttemptNo    int
	// LeaseUntil is the attempt's new lease.
	LeaseUntil time.Time
	// ProviderMessageID, when set, is recorded as the id of the message
	// the stream grows.
	ProviderMessageID string
	// Event, when set, is appended to the timeline with Detail.
	Event  string
	Detail json.RawMessage
}

// OutboxStreamPoll extends the lease of stream attempt p.AttemptNo,
// records what p names, and returns the stream; ErrNotFound when the
// attempt is no longer sending (another worker took it over).
func OutboxStreamPoll(ctx context.Context, tx DBTX, p StreamPollParams) (*StreamLook, error) {
	r, err := queries().OutboxStreamPoll(ctx, tx, &dbsqlc.OutboxStreamPollParams{TenantID: p.TenantID, ID: p.ID,
		AttemptNo: int32(p.AttemptNo), LeaseUntil: &p.LeaseUntil, ProviderMessageID: p.ProviderMessageID,
		Event: p.Event, Detail: p.Detail})
	if err != nil {
		return nil, translate(err)
	}
	l := &StreamLook{Text: r.Text, RichContent: r.RichContent, Finished: r.StreamFinishedAt != nil}
	if r.StreamSeq != nil {
		l.Seq = int(*r.StreamSeq)
	}
	return l, nil
}

// OutboxStreamRead returns the stream attempt p.AttemptNo as
// OutboxStreamPoll does, without extending its lease or recording
// anything (p's other fields are not used), as one read-only transaction
// in one round trip.
func OutboxStreamRead(ctx context.Context, pool *pgxpool.Pool, p StreamPollParams) (*StreamLook, error) {
	var r *dbsqlc.OutboxStreamReadRow
	err := tenantPipeline(ctx, pool, p.TenantID, func(b *pgx.Batch) {
		b.Queue(dbsqlc.OutboxStreamRead, p.TenantID, p.ID, int32(p.AttemptNo)).QueryRow(func(row pgx.Row) error {
			var x dbsqlc.OutboxStreamReadRow
			if err := row.Scan(&x.Text, &x.RichContent, &x.StreamSeq, &x.StreamFinishedAt); err != nil {
				return err
			}
			r = &x
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	l := &StreamLook{Text: r.Text, RichContent: r.RichContent, Finished: r.StreamFinishedAt != nil}
	if r.StreamSeq != nil {
		l.Seq = int(*r.StreamSeq)
	}
	return l, nil
}

// OutboxStreamTimeOut finishes the open stream attempt attemptNo with its
// text so far and appends its stream_timed_out event; ok is false when it
// was finished meanwhile or the attempt is no longer sending.
func OutboxStreamTimeOut(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, attemptNo int) (ok bool, err error) {
	_, err = queries().OutboxStreamTimeOut(ctx, tx, &dbsqlc.OutboxStreamTimeOutParams{TenantID: tenantID, ID: id,
		AttemptNo: int32(attemptNo)})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(err)
	}
	return true, nil
}
