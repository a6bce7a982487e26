package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// deadLetterPage is the answer to GET /admin/v1/dead-letters.
type deadLetterPage struct {
	Items []*db.DeadLetter `json:"items"`
}

// deadLetterQuery reads the optional tenant_id of an admin request.
func deadLetterTenant(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	v := r.URL.Query().Get("tenant_id")
	if v == "" {
		return uuid.Nil, true
	}
	id, err := uuid.Parse(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "tenant_id must be a UUID")
		return uuid.Nil, false
	}
	return id, true
}

// adminDeadList answers GET /admin/v1/dead-letters?tenant_id=&kind=
// &channel_type=&limit=: dead letters (mio.dead_letters), newest first,
// of one tenant or all.
func (s *Server) adminDeadList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "tenant_id", "kind", "channel_type", "limit":
		default:
			writeError(w, http.StatusBadRequest, "bad_request", "unknown query parameter "+strconv.Quote(k))
			return
		}
	}
	tenantID, ok := deadLetterTenant(w, r)
	if !ok {
		return
	}
	p := db.DeadLetterListParams{Kind: q.Get("kind"), ChannelType: q.Get("channel_type"), Limit: 100}
	switch p.Kind {
	case "", db.DeadLetterOutbound, db.DeadLetterConsumer, "attachment":
	default:
		writeError(w, http.StatusBadRequest, "bad_request", "kind: want outbound, consumer or attachment")
		return
	}
	if !s.knownChannelType(w, r, p.ChannelType) {
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit: want 1 to 1000")
			return
		}
		p.Limit = n
	}
	items, err := db.DeadLettersList(r.Context(), s.pool, tenantID, p)
	if err != nil {
		s.dbError(w, r, "list dead letters", err)
		return
	}
	if items == nil {
		items = []*db.DeadLetter{}
	}
	writeJSON(w, http.StatusOK, deadLetterPage{Items: items})
}

// adminDeadShow answers GET /admin/v1/dead-letters/{id}[?tenant_id=]:
// the dead letters with this id (a message can be dead for several
// consumers) and, for an outbound message, its event timeline.
func (s *Server) adminDeadShow(w http.ResponseWriter, r *http.Request) {
	id, tenantID, ok := s.deadLetterTarget(w, r)
	if !ok {
		return
	}
	items, err := db.DeadLettersFind(r.Context(), s.pool, tenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no such dead letter")
		return
	}
	if err != nil {
		s.dbError(w, r, "show dead letter", err)
		return
	}
	writeJSON(w, http.StatusOK, deadLetterPage{Items: items})
}

// adminDeadRequeue answers POST /admin/v1/dead-letters/{id}/requeue: it
// calls mio.requeue(id), exactly what an operator does from SQL. An id
// that is no longer a dead letter answers 200 with items 0 (idempotent).
func (s *Server) adminDeadRequeue(w http.ResponseWriter, r *http.Request) {
	s.adminDeadApply(w, r, admin.DeadRequeue)
}

// adminDeadDiscard answers POST /admin/v1/dead-letters/{id}/discard: it
// calls mio.discard(id).
func (s *Server) adminDeadDiscard(w http.ResponseWriter, r *http.Request) {
	s.adminDeadApply(w, r, admin.DeadDiscard)
}

func (s *Server) adminDeadApply(w http.ResponseWriter, r *http.Request, action string) {
	id, tenantID, ok := s.deadLetterTarget(w, r)
	if !ok {
		return
	}
	res, err := s.adminService(r).DeadApply(r.Context(), action, tenantID, id)
	if err != nil {
		s.adminError(w, r, action+" dead letter", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// deadBulkRequest is the body of POST /admin/v1/dead-letters/requeue and
// /discard: the filter of the dead letters to act on.
type deadBulkRequest struct {
	TenantID    uuid.UUID `json:"tenant_id"`
	Kind        string    `json:"kind"`
	ChannelType string    `json:"channel_type"`
	Limit       int       `json:"limit"`
}

// adminDeadBulk answers POST /admin/v1/dead-letters/{action}: requeue or
// discard every dead letter matching the filter (at most limit).
func (s *Server) adminDeadBulk(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req deadBulkRequest
		if !decodeAdmin(w, r, &req) {
			return
		}
		if !s.knownChannelType(w, r, req.ChannelType) {
			return
		}
		res, err := s.adminService(r).DeadApplyAll(r.Context(), action, admin.DeadFilter{TenantID: req.TenantID,
			Kind: req.Kind, ChannelType: req.ChannelType, Limit: req.Limit})
		if err != nil {
			s.adminError(w, r, action+" dead letters", err)
			return
		}
		writeJSON(w, http.StatusOK, admin.Page[*admin.DeadResult]{Items: res})
	}
}

func (s *Server) deadLetterTarget(w http.ResponseWriter, r *http.Request) (uuid.UUID, uuid.UUID, bool) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "dead letter id must be a UUID")
		return uuid.Nil, uuid.Nil, false
	}
	tenantID, ok := deadLetterTenant(w, r)
	return id, tenantID, ok
}

// knownChannelType answers 400 and returns false unless ct is empty or
// mio.channel_types holds it (registered or not: the dead letters of a
// channel no longer registered stay reachable).
func (s *Server) knownChannelType(w http.ResponseWriter, r *http.Request, ct string) bool {
	if ct == "" {
		return true
	}
	if !envelope.ValidChannelType(ct) {
		writeError(w, http.StatusBadRequest, "bad_request", "channel_type: not a channel type")
		return false
	}
	unknown, err := db.ChannelTypesUnknown(r.Context(), s.pool, []string{ct})
	if err != nil {
		s.dbError(w, r, "channel types", err)
		return false
	}
	if len(unknown) > 0 {
		writeError(w, http.StatusBadRequest, "bad_request", "channel_type: unknown channel")
		return false
	}
	return true
}
