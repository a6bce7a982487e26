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
// second per stream), waiting for the row when another transaction holds
// it; ok is false when it did not take (OutboxStreamGet tells why).
func OutboxStreamAppendCommit(ctx context.Context, pool *pgxpool.Pool, tenantID, id uuid.UUID, seq int, delta string, maxBytes int) (ok bool, err error) {
	err = tenantPipeline(ctx, pool, tenantID, func(b *pgx.Batch) {
		b.Queue(dbsqlc.OutboxStreamAppendWait, delta, int32(seq), tenantID, id, int32(maxBytes)).Query(func(rows pgx.Rows) error {
			ok = rows.Next()
			rows.Close()
			return rows.Err()
		})
	})
	if err != nil {
		return false, fmt.Errorf("stream append: %w", err)
	}
	return ok, nil
}

// StreamAppend is one append of OutboxStreamAppendMany: Delta to stream
// ID of TenantID as append Seq.
type StreamAppend struct {
	TenantID, ID uuid.UUID
	Seq          int
	Delta        string
}

// AppendOutcome is what OutboxStreamAppendMany did with one append.
type AppendOutcome uint8

const (
	// AppendRefused: the append did not take (OutboxStreamGet tells why).
	AppendRefused AppendOutcome = iota
	// AppendTaken: the append took.
	AppendTaken
	// AppendSkipped: the stream's row was held by another transaction
	// (or is not there); nothing was tried: try it alone
	// (OutboxStreamAppendCommit, which waits for the row).
	AppendSkipped
)

// OutboxStreamAppendMany does appends, in their order, as
// OutboxStreamAppendCommit does one, all in ONE transaction and one round
// trip: per tenant, its setting and one OutboxStreamAppendRound per
// round, pipelined up to one Sync. A round holds at most one append per
// stream: the k-th append of a stream in appends goes in round k, so
// appends to one stream take one after the other (seq 4 after seq 3 of
// the same batch) and a batch of one append per stream is one statement
// per tenant. A row another transaction holds (the dispatcher recording
// its send, a finish) is skipped, not waited for: its appends are
// AppendSkipped, and no other append of the batch waits behind it. An
// append that does not take changes nothing and fails none of the
// others. An error is the transaction's: nothing was written.
func OutboxStreamAppendMany(ctx context.Context, pool *pgxpool.Pool, appends []StreamAppend, maxBytes int) ([]AppendOutcome, error) {
	out := make([]AppendOutcome, len(appends))
	if len(appends) == 0 {
		return out, nil
	}
	b := &pgx.Batch{}
	for i := 0; i < len(appends); {
		tenant := appends[i].TenantID
		if tenant == uuid.Nil {
			return nil, fmt.Errorf("stream append: %w", ErrNoTenant)
		}
		var rounds []*appendRound
		seen := map[uuid.UUID]int{} // a stream's appends so far: its next round
		j := i
		for ; j < len(appends) && appends[j].TenantID == tenant; j++ {
			k := seen[appends[j].ID]
			seen[appends[j].ID]++
			if k == len(rounds) {
				rounds = append(rounds, &appendRound{})
			}
			rounds[k].add(j, appends[j])
		}
		b.Queue(setTenantSQL, tenant.String())
		for _, r := range rounds {
			b.Queue(dbsqlc.OutboxStreamAppendRound, r.ids, r.seqs, r.deltas, tenant, int32(maxBytes)).Query(func(rows pgx.Rows) error {
				locked := make(map[uuid.UUID]bool, len(r.ids))
				for rows.Next() {
					var id uuid.UUID
					var taken bool
					if err := rows.Scan(&id, &taken); err != nil {
						return err
					}
					locked[id] = taken
				}
				if err := rows.Err(); err != nil {
					return err
				}
				for n, id := range r.ids {
					switch taken, ok := locked[id]; {
					case !ok:
						out[r.at[n]] = AppendSkipped
					case taken:
						out[r.at[n]] = AppendTaken
					}
				}
				return nil
			})
		}
		i = j
	}
	if err := sendPipeline(ctx, pool, b); err != nil {
		return nil, fmt.Errorf("stream append: %w", err)
	}
	return out, nil
}

// appendRound is one OutboxStreamAppendRound: at most one append per
// stream; at[n] is the index in the batch of the append of ids[n].
type appendRound struct {
	ids    []uuid.UUID
	seqs   []int32
	deltas []string
	at     []int
}

func (r *appendRound) add(at int, a StreamAppend) {
	r.ids = append(r.ids, a.ID)
	r.seqs = append(r.seqs, int32(a.Seq))
	r.deltas = append(r.deltas, a.Delta)
	r.at = append(r.at, at)
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
// records what p names, and returns the stream, as one transaction in
// one round trip (the row is locked only for that statement and its
// commit: the stream's appends wait the least behind it); ErrNotFound
// when the attempt is no longer sending (another worker took it over).
func OutboxStreamPoll(ctx context.Context, pool *pgxpool.Pool, p StreamPollParams) (*StreamLook, error) {
	var l *StreamLook
	err := tenantPipeline(ctx, pool, p.TenantID, func(b *pgx.Batch) {
		b.Queue(dbsqlc.OutboxStreamPoll, &p.LeaseUntil, p.ProviderMessageID, p.TenantID, p.ID, int32(p.AttemptNo),
			p.Event, p.Detail).QueryRow(func(row pgx.Row) error {
			var r dbsqlc.OutboxStreamPollRow
			if err := row.Scan(&r.Text, &r.RichContent, &r.StreamSeq, &r.StreamFinishedAt); err != nil {
				return err
			}
			l = &StreamLook{Text: r.Text, RichContent: r.RichContent, Finished: r.StreamFinishedAt != nil}
			if r.StreamSeq != nil {
				l.Seq = int(*r.StreamSeq)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
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
