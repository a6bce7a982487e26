package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
)

// The /admin/v1 operator API (routes.go): handlers decode, call package
// admin (which audits every mutation as the request's admin token) and
// map its errors to statuses here.

// decodeAdmin decodes a JSON body into v, answering 400 on failure. An
// empty body is an empty object.
func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 && r.Header.Get("Transfer-Encoding") == "" {
		return true
	}
	if err := decodeJSON(w, r, v); err != nil {
		badRequest(w, err)
		return false
	}
	return true
}

// adminError maps the admin service's errors: invalid input 400, not
// found 404, conflict 409, anything else the database's.
func (s *Server) adminError(w http.ResponseWriter, r *http.Request, what string, err error) {
	switch {
	case errors.Is(err, admin.ErrInvalid):
		writeError(w, http.StatusBadRequest, "bad_request", strings.TrimPrefix(err.Error(), admin.ErrInvalid.Error()+": "))
	case errors.Is(err, db.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", what+": not found")
	case errors.Is(err, db.ErrConflict):
		writeError(w, http.StatusConflict, "conflict", what+": already exists")
	default:
		s.dbError(w, r, what, err)
	}
}

// uuidParam reads a UUID route parameter, answering 400 when malformed.
func uuidParam(w http.ResponseWriter, r *http.Request, name string) (uuid.UUID, bool) {
	id, err := uuid.Parse(chi.URLParam(r, name))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", name+" must be a UUID")
		return uuid.Nil, false
	}
	return id, true
}

// pageQuery reads ?after=&limit=.
func pageQuery(w http.ResponseWriter, r *http.Request) (string, int, bool) {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit: want 1 to 1000")
			return "", 0, false
		}
		limit = n
	}
	return r.URL.Query().Get("after"), limit, true
}

// changed is the answer of an idempotent mutation: changed false when it
// was a no-op.
type changed[T any] struct {
	Item    T    `json:"item"`
	Changed bool `json:"changed"`
}

// --- tenants

func (s *Server) adminTenantCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if !decodeAdmin(w, r, &req) {
		return
	}
	t, created, err := s.adminService(r).TenantCreate(r.Context(), req.Name)
	if err != nil {
		s.adminError(w, r, "create tenant", err)
		return
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK // the name is taken: the existing tenant
	}
	writeJSON(w, status, t)
}

func (s *Server) adminTenantList(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := pageQuery(w, r)
	if !ok {
		return
	}
	p, err := s.admin.TenantPage(r.Context(), after, limit)
	if err != nil {
		s.adminError(w, r, "list tenants", err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) adminTenantShow(w http.ResponseWriter, r *http.Request) {
	id, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	t, err := s.admin.TenantShow(r.Context(), id)
	if err != nil {
		s.adminError(w, r, "tenant", err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) adminTenantStatus(status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := uuidParam(w, r, "tenant_id")
		if !ok {
			return
		}
		t, ch, err := s.adminService(r).TenantSetStatus(r.Context(), id, status)
		if err != nil {
			s.adminError(w, r, "tenant", err)
			return
		}
		writeJSON(w, http.StatusOK, changed[*db.Tenant]{Item: t, Changed: ch})
	}
}

// --- accounts

// accountCreateRequest is the body of POST /admin/v1/tenants/{tenant_id}/accounts.
type accountCreateRequest struct {
	ChannelType   string          `json:"channel_type"`
	DisplayName   string          `json:"display_name"`
	ExternalID    string          `json:"external_id"`
	Settings      json.RawMessage `json:"settings"`
	Credentials   json.RawMessage `json:"credentials"`
	WebhookSecret string          `json:"webhook_secret"`
}

func (s *Server) adminAccountCreate(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	var req accountCreateRequest
	if !decodeAdmin(w, r, &req) {
		return
	}
	info, err := s.adminService(r).AccountCreate(r.Context(), admin.AccountCreateParams{TenantID: tid,
		ChannelType: req.ChannelType, DisplayName: req.DisplayName, ExternalID: req.ExternalID,
		Settings: req.Settings, Credentials: req.Credentials, WebhookSecret: req.WebhookSecret, Registry: s.registry})
	if err != nil {
		s.adminError(w, r, "create account", err)
		return
	}
	writeJSON(w, http.StatusCreated, info)
}

func (s *Server) adminAccountList(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	after, limit, ok := pageQuery(w, r)
	if !ok {
		return
	}
	p, err := s.admin.AccountPage(r.Context(), tid, after, limit)
	if err != nil {
		s.adminError(w, r, "list accounts", err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// accountTarget reads {account_id} and resolves its tenant.
func (s *Server) accountTarget(w http.ResponseWriter, r *http.Request) (tenantID, id uuid.UUID, ok bool) {
	id, ok = uuidParam(w, r, "account_id")
	if !ok {
		return uuid.Nil, uuid.Nil, false
	}
	tenantID, err := s.admin.TenantOfAccount(r.Context(), id)
	if err != nil {
		s.adminError(w, r, "account", err)
		return uuid.Nil, uuid.Nil, false
	}
	return tenantID, id, true
}

func (s *Server) adminAccountShow(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := s.accountTarget(w, r)
	if !ok {
		return
	}
	info, err := s.admin.AccountShow(r.Context(), tid, id)
	if err != nil {
		s.adminError(w, r, "account", err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) adminAccountUpdate(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := s.accountTarget(w, r)
	if !ok {
		return
	}
	var req admin.AccountUpdate
	if !decodeAdmin(w, r, &req) {
		return
	}
	info, err := s.adminService(r).AccountUpdate(r.Context(), tid, id, req)
	if err != nil {
		s.adminError(w, r, "update account", err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) adminAccountStatus(status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tid, id, ok := s.accountTarget(w, r)
		if !ok {
			return
		}
		info, err := s.adminService(r).AccountSetStatus(r.Context(), tid, id, status)
		if err != nil {
			s.adminError(w, r, "account", err)
			return
		}
		s.forgetAccount(id)
		writeJSON(w, http.StatusOK, info)
	}
}

func (s *Server) adminAccountRotateSecret(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := s.accountTarget(w, r)
	if !ok {
		return
	}
	var req struct {
		WebhookSecret string `json:"webhook_secret"`
		// Grace is a Go duration ("24h"); empty: admin.DefaultSecretGrace.
		Grace string `json:"grace"`
	}
	if !decodeAdmin(w, r, &req) {
		return
	}
	grace := admin.DefaultSecretGrace
	if req.Grace != "" {
		d, err := time.ParseDuration(req.Grace)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "grace: want a duration such as 24h")
			return
		}
		grace = d
	}
	info, err := s.adminService(r).AccountRotateWebhookSecret(r.Context(), tid, id, req.WebhookSecret, grace)
	if err != nil {
		s.adminError(w, r, "rotate webhook secret", err)
		return
	}
	s.forgetAccount(id)
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) adminAccountRotateCredentials(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := s.accountTarget(w, r)
	if !ok {
		return
	}
	var req struct {
		Credentials json.RawMessage `json:"credentials"`
	}
	if !decodeAdmin(w, r, &req) {
		return
	}
	info, err := s.adminService(r).AccountRotateCredentials(r.Context(), tid, id, req.Credentials)
	if err != nil {
		s.adminError(w, r, "rotate credentials", err)
		return
	}
	s.forgetAccount(id)
	writeJSON(w, http.StatusOK, info)
}

// forgetAccount drops a changed account from this process's cache (other
// processes see the change within accounts.CacheTTL).
func (s *Server) forgetAccount(id uuid.UUID) {
	if s.accounts != nil {
		s.accounts.Forget(id)
	}
}

// --- API tokens

func (s *Server) adminTokenCreate(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	var req struct {
		Name  string    `json:"name"`
		Roles []db.Role `json:"roles"`
	}
	if !decodeAdmin(w, r, &req) {
		return
	}
	token, meta, err := s.adminService(r).TokenCreate(r.Context(), tid, req.Name, req.Roles)
	if err != nil {
		s.adminError(w, r, "create token", err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		Token string `json:"token"`
		*db.APIToken
	}{token, meta})
}

func (s *Server) adminTokenList(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	after, limit, ok := pageQuery(w, r)
	if !ok {
		return
	}
	p, err := s.admin.TokenPage(r.Context(), tid, after, limit)
	if err != nil {
		s.adminError(w, r, "list tokens", err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) adminTokenRevoke(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	id, ok := uuidParam(w, r, "token_id")
	if !ok {
		return
	}
	tok, ch, err := s.adminService(r).TokenRevoke(r.Context(), tid, id)
	if err != nil {
		s.adminError(w, r, "token", err)
		return
	}
	writeJSON(w, http.StatusOK, changed[*db.APIToken]{Item: tok, Changed: ch})
}

// --- admin tokens

func (s *Server) adminAdminTokenCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name  string         `json:"name"`
		Roles []db.AdminRole `json:"roles"`
		// TTL is a Go duration ("720h"); empty: no expiry.
		TTL string `json:"ttl"`
	}
	if !decodeAdmin(w, r, &req) {
		return
	}
	p := admin.AdminTokenCreateParams{Name: req.Name, Roles: req.Roles}
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, "bad_request", "ttl: want a positive duration such as 720h")
			return
		}
		p.TTL = d
	}
	token, meta, err := s.adminService(r).AdminTokenCreate(r.Context(), p)
	if err != nil {
		s.adminError(w, r, "create admin token", err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		Token string `json:"token"`
		*db.AdminToken
	}{token, meta})
}

func (s *Server) adminAdminTokenList(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := pageQuery(w, r)
	if !ok {
		return
	}
	p, err := s.admin.AdminTokenList(r.Context(), after, limit)
	if err != nil {
		s.adminError(w, r, "list admin tokens", err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) adminAdminTokenRevoke(w http.ResponseWriter, r *http.Request) {
	id, ok := uuidParam(w, r, "token_id")
	if !ok {
		return
	}
	tok, ch, err := s.adminService(r).AdminTokenRevoke(r.Context(), id)
	if err != nil {
		s.adminError(w, r, "admin token", err)
		return
	}
	writeJSON(w, http.StatusOK, changed[*db.AdminToken]{Item: tok, Changed: ch})
}

// --- consumers

func (s *Server) adminConsumerList(w http.ResponseWriter, r *http.Request) {
	tid, ok := deadLetterTenant(w, r)
	if !ok {
		return
	}
	after, limit, ok := pageQuery(w, r)
	if !ok {
		return
	}
	p, err := s.admin.ConsumerPage(r.Context(), tid, after, limit)
	if err != nil {
		s.adminError(w, r, "list consumers", err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) adminConsumerShow(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	c, err := s.admin.ConsumerShow(r.Context(), tid, chi.URLParam(r, "name"))
	if err != nil {
		s.adminError(w, r, "consumer", err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) adminConsumerDelete(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	if err := s.adminService(r).ConsumerDelete(r.Context(), tid, chi.URLParam(r, "name")); err != nil {
		s.adminError(w, r, "consumer", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminConsumerSeek(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	var req struct {
		// Time: deliver the messages received from then on (RFC 3339).
		Time time.Time `json:"time"`
	}
	if !decodeAdmin(w, r, &req) {
		return
	}
	c, err := s.adminService(r).ConsumerSeek(r.Context(), tid, chi.URLParam(r, "name"), req.Time)
	if err != nil {
		s.adminError(w, r, "consumer", err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// --- queue health

func (s *Server) adminQueueHealth(w http.ResponseWriter, r *http.Request) {
	tid, ok := deadLetterTenant(w, r)
	if !ok {
		return
	}
	rows, err := s.admin.QueueHealth(r.Context(), tid)
	if err != nil {
		s.adminError(w, r, "queue health", err)
		return
	}
	writeJSON(w, http.StatusOK, admin.Page[*db.QueueHealth]{Items: rows})
}

// --- channel types

// adminChannelTypes lists the channels MIO has adapters for, from the
// registry: capabilities, default rate limits and setup text.
func (s *Server) adminChannelTypes(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, admin.Page[channels.Description]{Items: s.admin.ChannelTypes()})
}

// --- audit

func (s *Server) adminAuditList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := db.AuditListParams{Action: q.Get("action")}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "bad_request", "before: want an audit entry id")
			return
		}
		p.BeforeID = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit: want 1 to 1000")
			return
		}
		p.Limit = n
	}
	tid, ok := deadLetterTenant(w, r)
	if !ok {
		return
	}
	p.TenantID = tid
	page, err := s.admin.AuditList(r.Context(), p)
	if err != nil {
		s.adminError(w, r, "audit log", err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
