package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/miohq/mio/outbox"
)

// streamAnswer is the answer to an append or a finish of a stream.
type streamAnswer struct {
	ID       uuid.UUID `json:"id"`
	Seq      int       `json:"seq"`
	Finished bool      `json:"finished"`
}

// seqConflict is the 409 of an append or finish out of order: the error
// and the seq the stream expects.
type seqConflict struct {
	Error       errorDetail `json:"error"`
	ExpectedSeq int         `json:"expected_seq"`
}

// appendOutbound answers POST /v1/outbound/{id}/append {seq, text_delta}
// (outbox.Append): 200 when taken, and the same 200 for a seq taken
// before; 409 seq_conflict naming expected_seq for a gap, 409
// stream_finished after the finish, 409 not_a_stream; 413 body_too_large
// when the delta, or the stream's text with it, is over the message limit;
// 400 for other bad input; 404 for no such message.
func (s *Server) appendOutbound(w http.ResponseWriter, r *http.Request) {
	id, ok := outboundID(w, r)
	if !ok {
		return
	}
	var req struct {
		Seq       int    `json:"seq"`
		TextDelta string `json:"text_delta"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		badRequest(w, err)
		return
	}
	err := s.outbox.Append(r.Context(), principalFrom(r.Context()).TenantID, id, req.Seq, req.TextDelta)
	if err != nil {
		s.outboxError(w, r, "stream append", "", err)
		return
	}
	writeJSON(w, http.StatusOK, streamAnswer{ID: id, Seq: req.Seq})
}

// finishOutbound answers POST /v1/outbound/{id}/finish {seq?, text?,
// rich_content?} (outbox.FinishStream): 200 when finished, and again for
// a retry; 409 seq_conflict when seq is not the stream's last append; 422
// stream_empty when the message would have nothing to show (the stream
// stays open); other errors as appendOutbound.
func (s *Server) finishOutbound(w http.ResponseWriter, r *http.Request) {
	id, ok := outboundID(w, r)
	if !ok {
		return
	}
	var req struct {
		Seq         int             `json:"seq"`
		Text        *string         `json:"text"`
		RichContent json.RawMessage `json:"rich_content"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		badRequest(w, err)
		return
	}
	f := outbox.Finish{Seq: req.Seq, Text: req.Text, RichContent: req.RichContent}
	if err := s.outbox.FinishStream(r.Context(), principalFrom(r.Context()).TenantID, id, f); err != nil {
		s.outboxError(w, r, "stream finish", "", err)
		return
	}
	writeJSON(w, http.StatusOK, streamAnswer{ID: id, Seq: req.Seq, Finished: true})
}

// outboundID is the {id} of an /v1/outbound/{id} route; it answers 400
// itself when it is not a UUID.
func outboundID(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "outbound id must be a UUID")
		return uuid.Nil, false
	}
	return id, true
}
