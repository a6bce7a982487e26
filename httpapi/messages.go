package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// getMessage answers GET /v1/messages/{id}: one inbound message of the
// caller's tenant, with its raw payload.
func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "message id must be a UUID")
		return
	}
	var m *db.InboxMessage
	err = db.InTenantTx(r.Context(), s.pool, p.TenantID, func(tx pgx.Tx) error {
		var err error
		m, err = db.InboxGet(r.Context(), tx, p.TenantID, id)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no such message")
		return
	}
	if err != nil {
		s.dbError(w, r, "get message", err)
		return
	}
	msg, err := messageOf(m)
	if err != nil {
		s.dbError(w, r, "decode message", err)
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

// messageOf rebuilds the envelope of a stored row, raw payload included.
func messageOf(m *db.InboxMessage) (*envelope.Message, error) {
	var msg envelope.Message
	if err := json.Unmarshal(m.Envelope, &msg); err != nil {
		return nil, err
	}
	if len(m.Raw) > 0 && json.Valid(m.Raw) {
		msg.Raw = json.RawMessage(m.Raw)
	}
	return &msg, nil
}
