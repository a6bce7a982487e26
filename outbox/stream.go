package outbox

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/groupcommit"
)

var (
	// ErrNotStream: the message was not sent with "stream": true.
	ErrNotStream = errors.New("the outbound message is not a stream")
	// ErrStreamFinished: the stream was finished (by its agent, or by the
	// dispatcher when it timed out) and takes no more appends.
	ErrStreamFinished = errors.New("the stream is finished")
	// ErrStreamEmpty: a finish that would leave the message with nothing
	// to show (blank text and no rich content); the stream stays open.
	ErrStreamEmpty = errors.New("text: the stream has no text to show; finish it with text or rich_content")
)

// TooLargeError is text over the limit of a message (maxTextBytes):
// nothing was written.
type TooLargeError struct {
	// Field is the field as the JSON names it (text_delta, text).
	Field string
	// Limit is the most bytes a message's text may have.
	Limit int
	// Total: the stream's text with the delta would exceed Limit, though
	// the delta alone does not.
	Total bool
}

func (e *TooLargeError) Error() string {
	if e.Total {
		return fmt.Sprintf("%s: the stream's text would be longer than %d bytes", e.Field, e.Limit)
	}
	return fmt.Sprintf("%s is longer than %d bytes", e.Field, e.Limit)
}

// StreamSeqError is an append or finish whose seq is not the one the
// stream expects next; nothing was written.
type StreamSeqError struct {
	// Expected is the seq the stream takes next (for a finish: the seq of
	// its last append).
	Expected int
	Got      int
}

func (e *StreamSeqError) Error() string {
	return fmt.Sprintf("seq %d is out of order: the stream expects %d", e.Got, e.Expected)
}

// Finish is the end of a stream: Text, when not nil, is the complete
// final text (it replaces what was appended); RichContent, when given, is
// sent with it; Seq, when not 0, is the client's last append, checked.
type Finish struct {
	Seq         int
	Text        *string
	RichContent json.RawMessage
}

// Append adds delta to the open stream id as the client's append seq
// (1, 2, 3…) in one statement, one transaction and one round trip; with
// append group commit started (StartAppendGroupCommit) the transaction
// is shared with concurrent appends, of any stream and tenant. An append
// whose seq the stream already took is a no-op answered as before; a gap
// is a *StreamSeqError naming the seq expected; an append to a finished
// stream is ErrStreamFinished; text beyond the message limit (the delta,
// or the stream's text with it) is a *TooLargeError.
func (s *Service) Append(ctx context.Context, tenantID, id uuid.UUID, seq int, delta string) error {
	switch {
	case seq < 1:
		return invalid("seq", "seq is required and counts from 1")
	case !utf8.ValidString(delta):
		return invalid("text_delta", "text_delta is not valid UTF-8")
	case len(delta) > maxTextBytes:
		return &TooLargeError{Field: "text_delta", Limit: maxTextBytes}
	}
	for attempt := 0; ; attempt++ {
		var ok bool
		var err error
		if s.appends != nil {
			ok, err = s.appends.Do(ctx, db.StreamAppend{TenantID: tenantID, ID: id, Seq: seq, Delta: delta})
		}
		if s.appends == nil || errors.Is(err, errAppendSkipped) {
			// Alone: no group commit, or the group skipped the
			// stream's row, which another transaction held.
			ok, err = db.OutboxStreamAppendCommit(ctx, s.pool, tenantID, id, seq, delta, maxTextBytes)
		}
		if err != nil || ok {
			return err
		}
		// Not taken: read why.
		again, err := s.appendRefused(ctx, tenantID, id, seq, len(delta))
		if !again || attempt == 2 {
			return err
		}
	}
}

// appendRefused says why append seq (delta bytes long) of stream id was
// not taken: a retry of an append taken before (nil), a finished stream,
// a gap, or text beyond the limit. again: none of those — the append
// before it committed after this one was refused (a client sending
// appends concurrently, in separate transactions), so it should be tried
// again.
func (s *Service) appendRefused(ctx context.Context, tenantID, id uuid.UUID, seq, delta int) (again bool, err error) {
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		st, err := s.streamState(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		switch {
		case seq <= *st.Seq:
			return nil // taken before: a retry
		case st.Finished:
			return ErrStreamFinished
		case seq != *st.Seq+1:
			return &StreamSeqError{Expected: *st.Seq + 1, Got: seq}
		case st.TextBytes+delta > maxTextBytes:
			return &TooLargeError{Field: "text_delta", Limit: maxTextBytes, Total: true}
		default:
			again = true
			return nil
		}
	})
	return again, err
}

// StartAppendGroupCommit makes Append share transactions between
// concurrent calls, as StartGroupCommit does for Send (cfg tunes the
// window, batch size and flushers; mio serve gives both the same). Call
// it once, before serving; stop refuses new appends, commits what is
// queued and waits.
func (s *Service) StartAppendGroupCommit(cfg groupcommit.Config) (stop func()) {
	cfg.Unavailable = db.IsUnavailable
	if cfg.Name == "" {
		cfg.Name = "append"
	}
	s.appends = groupcommit.New(s.commitAppends, cfg)
	s.appends.Start()
	return s.appends.Stop
}

// errAppendSkipped is the answer of an append its group skipped: the
// stream's row was held by another transaction. Append then tries it
// alone.
var errAppendSkipped = errors.New("stream append: the row was busy; try alone")

// commitAppends is the append group-commit Func: the batch's appends in
// ONE transaction and one round trip (db.OutboxStreamAppendMany), ordered
// by tenant (one tenant setting each), stream and seq, one statement per
// round of at most one append per stream. The order is the rows' lock
// order, the same in every batch; and two appends of one stream in a
// batch take in seq order whichever came first. A row another
// transaction holds is skipped (errAppendSkipped: Append tries it alone),
// so no batch waits behind one busy row. Each answer is its own
// append's: taken, or not (Append reads why after the commit).
func (s *Service) commitAppends(ctx context.Context, reqs []db.StreamAppend) ([]groupcommit.Outcome[bool], error) {
	at := make([]int, len(reqs)) // at[k]: the request of the k-th statement
	for i := range at {
		at[i] = i
	}
	slices.SortStableFunc(at, func(i, j int) int {
		a, b := reqs[i], reqs[j]
		if c := bytes.Compare(a.TenantID[:], b.TenantID[:]); c != 0 {
			return c
		}
		if c := bytes.Compare(a.ID[:], b.ID[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	appends := make([]db.StreamAppend, len(reqs))
	for k, i := range at {
		appends[k] = reqs[i]
	}
	done, err := db.OutboxStreamAppendMany(ctx, s.pool, appends, maxTextBytes)
	if err != nil {
		return nil, err
	}
	outs := make([]groupcommit.Outcome[bool], len(reqs))
	for k, i := range at {
		switch done[k] {
		case db.AppendTaken:
			outs[i].Res = true
		case db.AppendSkipped:
			outs[i].Err = errAppendSkipped
		}
	}
	return outs, nil
}

// FinishStream ends the open stream id: the dispatcher sends its final
// text (f.Text when given, else what was appended) and hands the message
// off. Finishing a finished stream again is a no-op (a retry), unless
// f.Seq names appends it never took (*StreamSeqError). A finish that
// would leave nothing to show (blank text, no rich content) is
// ErrStreamEmpty and changes nothing; text over the message limit is a
// *TooLargeError.
func (s *Service) FinishStream(ctx context.Context, tenantID, id uuid.UUID, f Finish) error {
	if f.Seq < 0 {
		return invalid("seq", "seq counts from 1")
	}
	if f.Text != nil {
		switch {
		case len(*f.Text) > maxTextBytes:
			return &TooLargeError{Field: "text", Limit: maxTextBytes}
		case !utf8.ValidString(*f.Text):
			return invalid("text", "text is not valid UTF-8")
		}
	}
	rich, err := decodeRich(f.RichContent)
	if err != nil {
		return err
	}
	var richJSON json.RawMessage
	if rich != nil {
		richJSON, _ = json.Marshal(rich)
	}
	return db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		ok, err := db.OutboxStreamFinish(ctx, tx, tenantID, id, f.Seq, f.Text, richJSON)
		if err != nil || ok {
			return err
		}
		st, err := s.streamState(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		switch {
		case st.Finished && f.Seq > *st.Seq:
			// It never took the appends f.Seq counts.
			return &StreamSeqError{Expected: *st.Seq, Got: f.Seq}
		case st.Finished:
			return nil // a retry
		case f.Seq != 0 && f.Seq != *st.Seq:
			return &StreamSeqError{Expected: *st.Seq, Got: f.Seq}
		default:
			// Open and in order: the finish left nothing to show.
			return ErrStreamEmpty
		}
	})
}

// streamState reads id as a stream: ErrNotFound, ErrNotStream, or its
// state with Seq set.
func (s *Service) streamState(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (*db.StreamState, error) {
	st, err := db.OutboxStreamGet(ctx, tx, tenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if st.Seq == nil {
		return nil, ErrNotStream
	}
	return st, nil
}
