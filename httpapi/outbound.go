package httpapi

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/tracing"
)

// sendAccepted is the answer to POST /v1/outbound.
type sendAccepted struct {
	ID           uuid.UUID       `json:"id"`
	HandoffState db.HandoffState `json:"handoff_state"`
}

// postOutbound answers POST /v1/outbound (outbox.Send): 202 when
// accepted; 200 with the same id when the tenant already sent this
// idempotency key; 409 when that key named a different command; 400 for
// bad input (nothing written); 503 when the enqueue cannot commit
// (nothing written).
func (s *Server) postOutbound(w http.ResponseWriter, r *http.Request) {
	var req struct {
		envelope.SendCommand
		// Ack, when present, acknowledges a delivery in the same
		// transaction (reply.go).
		Ack *ackRef `json:"ack"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		badRequest(w, err)
		return
	}
	if req.Ack != nil {
		s.replyWithAck(w, r, req.Ack.Consumer, req.Ack.DeliveryID, req.SendCommand)
		return
	}
	cmd := req.SendCommand
	cmd.Traceparent = tracing.Traceparent(r.Context())
	sent, err := s.outbox.Send(r.Context(), principalFrom(r.Context()).TenantID, &cmd)
	switch {
	case err != nil:
		s.outboxError(w, r, "outbound enqueue", "could not enqueue the message; nothing was written, retry", err)
	case sent.Replayed:
		writeJSON(w, http.StatusOK, sendAccepted{ID: sent.ID, HandoffState: sent.HandoffState})
	default:
		w.Header().Set("Location", "/v1/outbound/"+sent.ID.String())
		writeJSON(w, http.StatusAccepted, sendAccepted{ID: sent.ID, HandoffState: sent.HandoffState})
	}
}

// getOutbound answers GET /v1/outbound/{id}: the message, both states,
// attempts, last error, provider id and its event timeline.
func (s *Server) getOutbound(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "outbound id must be a UUID")
		return
	}
	o, events, err := s.outbox.Get(r.Context(), principalFrom(r.Context()).TenantID, id)
	if err != nil {
		s.outboxError(w, r, "get outbound", "", err)
		return
	}
	writeJSON(w, http.StatusOK, outboundViewOf(o, events))
}

// outboundPage is the answer to GET /v1/outbound.
type outboundPage struct {
	Items      []*outboundView `json:"items"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// listOutbound answers GET /v1/outbound?state=&provider_state=&account_id=
// &conversation_id=&limit=&cursor=: the tenant's messages, newest first,
// keyset-paged (next_cursor, when present, fetches the next page).
func (s *Server) listOutbound(w http.ResponseWriter, r *http.Request) {
	lp, err := outboundListParams(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	page, err := s.outbox.List(r.Context(), principalFrom(r.Context()).TenantID, lp)
	if err != nil {
		s.outboxError(w, r, "list outbound", "", err)
		return
	}
	out := outboundPage{Items: make([]*outboundView, len(page.Items))}
	for i, o := range page.Items {
		out.Items[i] = outboundViewOf(o, nil)
	}
	if page.Next != uuid.Nil {
		out.NextCursor = encodeCursor(page.Next)
	}
	writeJSON(w, http.StatusOK, out)
}

// outboundListParams decodes the query of GET /v1/outbound; the error's
// text is shown to the caller.
func outboundListParams(q url.Values) (db.OutboxListParams, error) {
	for k := range q {
		switch k {
		case "state", "provider_state", "account_id", "conversation_id", "limit", "cursor":
		default:
			return db.OutboxListParams{}, errors.New("unknown query parameter " + strconv.Quote(k))
		}
	}
	lp := db.OutboxListParams{HandoffState: db.HandoffState(q.Get("state")), ProviderState: db.ProviderState(q.Get("provider_state")),
		ConversationID: q.Get("conversation_id"), Limit: outbox.DefaultListLimit}
	if lp.HandoffState != "" && !lp.HandoffState.Valid() {
		return lp, errors.New("state: want queued, sending, handed_off or dead")
	}
	if lp.ProviderState != "" && !lp.ProviderState.Valid() {
		return lp, errors.New("provider_state: want unknown, accepted, delivered, read, timed_out, bounced, dropped, complaint or failed")
	}
	if v := q.Get("account_id"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return lp, errors.New("account_id must be a UUID")
		}
		lp.AccountID = id
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > outbox.MaxListLimit {
			return lp, errors.New("limit: want 1 to " + strconv.Itoa(outbox.MaxListLimit))
		}
		lp.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		id, err := decodeCursor(v)
		if err != nil {
			return lp, errors.New("cursor: not a cursor from a previous page")
		}
		lp.BeforeID = id
	}
	return lp, nil
}

// A list cursor is the last id of the page, opaque to clients.
func encodeCursor(id uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte("o:"), id[:]...))
}

func decodeCursor(c string) (uuid.UUID, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return uuid.Nil, err
	}
	raw, ok := bytes.CutPrefix(b, []byte("o:"))
	if !ok || len(raw) != 16 {
		return uuid.Nil, errors.New("bad cursor")
	}
	return uuid.UUID(raw), nil
}

// resendAccepted is the answer to a resend.
type resendAccepted struct {
	ID           uuid.UUID       `json:"id"`
	HandoffState db.HandoffState `json:"handoff_state"`
	Attempt      int             `json:"attempt"`
}

// resendOutbound answers POST /v1/outbound/{id}/resend (outbox.Resend):
// 202 with the new series' first attempt; 409 while a handoff is in
// progress; 404 for no such message.
func (s *Server) resendOutbound(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "outbound id must be a UUID")
		return
	}
	attempt, err := s.outbox.Resend(r.Context(), principalFrom(r.Context()).TenantID, id)
	if err != nil {
		s.outboxError(w, r, "resend outbound", "could not enqueue the resend; nothing changed, retry", err)
		return
	}
	writeJSON(w, http.StatusAccepted, resendAccepted{ID: id, HandoffState: db.HandoffQueued, Attempt: attempt})
}

// outboxError answers an error of the outbox package. retry, set for
// writes, is the 503 message when the dispatch job could not be enqueued
// or the database was unavailable (nothing was written).
func (s *Server) outboxError(w http.ResponseWriter, r *http.Request, what, retry string, err error) {
	if s.clientGone(r, what, err) {
		return
	}
	var invalid *outbox.ValidationError
	var busy *outbox.InProgressError
	var seq *outbox.StreamSeqError
	var tooLarge *outbox.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", tooLarge.Error())
	case errors.Is(err, outbox.ErrStreamEmpty):
		writeError(w, http.StatusUnprocessableEntity, "stream_empty", err.Error())
	case errors.As(err, &seq):
		writeJSON(w, http.StatusConflict, seqConflict{Error: errorDetail{Code: "seq_conflict", Message: seq.Error()},
			ExpectedSeq: seq.Expected})
	case errors.Is(err, outbox.ErrStreamFinished):
		writeError(w, http.StatusConflict, "stream_finished", "the stream is finished and takes no more appends")
	case errors.Is(err, outbox.ErrNotStream):
		writeError(w, http.StatusConflict, "not_a_stream", "the outbound message was not sent with \"stream\": true")
	case errors.As(err, &invalid):
		writeError(w, http.StatusBadRequest, "bad_request", invalid.Error())
	case errors.Is(err, outbox.ErrNotConfigured):
		writeError(w, http.StatusServiceUnavailable, "unavailable", "outbound dispatch is not configured")
	case errors.Is(err, outbox.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no such outbound message")
	case errors.Is(err, outbox.ErrKeyConflict):
		writeError(w, http.StatusConflict, "conflict", "idempotency_key was already used for a different command")
	case errors.As(err, &busy):
		writeError(w, http.StatusConflict, "conflict",
			"the message is still being handed off ("+string(busy.State)+"); resend it once it is handed_off or dead")
	case retry != "" && (errors.Is(err, outbox.ErrEnqueue) || db.IsUnavailable(err)):
		s.log.Warn("outbound: could not enqueue", "step", what, "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", retry)
	default:
		s.dbError(w, r, what, err)
	}
}

// outboundView is an outbound message as the API shows it (shared with
// the NATS bridge's outbound events).
type outboundView = outbox.View

// outboundViewOf is the view of o with its timeline.
func outboundViewOf(o *db.Outbound, events []db.OutboxEvent) *outboundView {
	return outbox.ViewOf(o, events)
}
