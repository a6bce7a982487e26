package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/miohq/mio/typing"
)

// typingRequest is the body of POST /v1/conversations/typing.
type typingRequest struct {
	AccountID      uuid.UUID `json:"account_id"`
	ConversationID string    `json:"conversation_id"`
	ThreadID       string    `json:"thread_id"`
}

// postTyping answers POST /v1/conversations/typing (typing.Service): the
// platform call is made at once, best effort; the answer is 200 with the
// outcome (sent, unsupported, throttled, failed) whatever the platform
// did. 400 for bad input, 404 for an unknown account, 409 for a disabled
// one, 503 when signals are not configured.
func (s *Server) postTyping(w http.ResponseWriter, r *http.Request) {
	var req typingRequest
	if err := decodeJSON(w, r, &req); err != nil {
		badRequest(w, err)
		return
	}
	switch {
	case req.AccountID == uuid.Nil:
		writeError(w, http.StatusBadRequest, "bad_request", "account_id is required")
		return
	case strings.TrimSpace(req.ConversationID) == "" || len(req.ConversationID) > 512 || len(req.ThreadID) > 512:
		writeError(w, http.StatusBadRequest, "bad_request", "conversation_id is required; conversation_id and thread_id are at most 512 bytes")
		return
	case s.typing == nil:
		writeError(w, http.StatusServiceUnavailable, "unavailable", "typing signals are not configured")
		return
	}
	res, err := s.typing.Signal(r.Context(), principalFrom(r.Context()).TenantID, req.AccountID, req.ConversationID, req.ThreadID)
	switch {
	case errors.Is(err, typing.ErrAccountNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no such account")
	case errors.Is(err, typing.ErrAccountDisabled):
		writeError(w, http.StatusConflict, "conflict", "the account is not active")
	case err != nil:
		s.dbError(w, r, "typing", err)
	default:
		writeJSON(w, http.StatusOK, res)
	}
}
