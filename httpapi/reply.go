package httpapi

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/tracing"
)

// replyRequest is the body of POST /v1/consumers/{name}/reply: a
// SendCommand plus the delivery it answers.
type replyRequest struct {
	DeliveryID uuid.UUID `json:"delivery_id"`
	envelope.SendCommand
}

// ackRef is the "ack" of POST /v1/outbound: the delivery the message
// answers, acknowledged in the same transaction.
type ackRef struct {
	Consumer   string    `json:"consumer"`
	DeliveryID uuid.UUID `json:"delivery_id"`
}

// postReply answers POST /v1/consumers/{name}/reply (reply.Service): the
// ack and the outbox row commit together. 202 when accepted; 200 with the
// same id for a replay of the idempotency key; 409 lease_lost when the
// lease is not live (nothing written); other errors as POST /v1/outbound.
// Needs the produce role besides consume.
func (s *Server) postReply(w http.ResponseWriter, r *http.Request) {
	var req replyRequest
	if err := decodeJSON(w, r, &req); err != nil {
		badRequest(w, err)
		return
	}
	s.replyWithAck(w, r, chi.URLParam(r, "name"), req.DeliveryID, req.SendCommand)
}

// replyWithAck checks the roles and the delivery id, replies and answers.
func (s *Server) replyWithAck(w http.ResponseWriter, r *http.Request, consumer string, deliveryID uuid.UUID, cmd envelope.SendCommand) {
	p := principalFrom(r.Context())
	if !p.Has(db.RoleProduce) || !p.Has(db.RoleConsume) {
		writeError(w, http.StatusForbidden, "forbidden", "a reply with ack needs roles consume and produce")
		return
	}
	if deliveryID == uuid.Nil {
		writeError(w, http.StatusBadRequest, "bad_request", "delivery_id is required")
		return
	}
	if !consume.ValidName(consumer) {
		writeError(w, http.StatusBadRequest, "bad_request", "invalid consumer name")
		return
	}
	if s.replies == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "replies are not configured")
		return
	}
	cmd.Traceparent = tracing.Traceparent(r.Context())
	sent, err := s.replies.Reply(r.Context(), p.TenantID, consumer, deliveryID, cmd)
	switch {
	case errors.Is(err, consume.ErrLeaseLost):
		writeError(w, http.StatusConflict, "lease_lost",
			"the delivery is no longer leased to this consumer (expired, settled or redelivered); nothing was written")
	case errors.Is(err, consume.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no such consumer")
	case err != nil:
		s.outboxError(w, r, "reply", "could not enqueue the reply; nothing was written, retry", err)
	case sent.Replayed:
		writeJSON(w, http.StatusOK, sendAccepted{ID: sent.ID, HandoffState: sent.HandoffState})
	default:
		w.Header().Set("Location", "/v1/outbound/"+sent.ID.String())
		writeJSON(w, http.StatusAccepted, sendAccepted{ID: sent.ID, HandoffState: sent.HandoffState})
	}
}
