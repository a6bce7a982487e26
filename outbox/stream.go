package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
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
// (1, 2, 3…) in one statement, one transaction and one round trip. An append whose seq the
// stream already took is a no-op answered as before; a gap is a
// *StreamSeqError naming the seq expected; an append to a finished stream
// is ErrStreamFinished; text beyond the message limit (the delta, or the
// stream's text with it) is a *TooLargeError.
func (s *Service) Append(ctx context.Context, tenantID, id uuid.UUID, seq int, delta string) error {
	switch {
	case seq < 1:
		return invalid("seq", "seq is required and counts from 1")
	case !utf8.ValidString(delta):
		return invalid("text_delta", "text_delta is not valid UTF-8")
	case len(delta) > maxTextBytes:
		return &TooLargeError{Field: "text_delta", Limit: maxTextBytes}
	}
	ok, err := db.OutboxStreamAppendCommit(ctx, s.pool, tenantID, id, seq, delta, maxTextBytes)
	if err != nil || ok {
		return err
	}
	// Not taken: read why.
	return db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
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
		default:
			return &TooLargeError{Field: "text_delta", Limit: maxTextBytes, Total: true}
		}
	})
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
