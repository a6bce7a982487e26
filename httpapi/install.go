package httpapi

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/install"
)

// installRequest is POST /admin/v1/installs.
type installRequest struct {
	TenantID      uuid.UUID       `json:"tenant_id"`
	ChannelType   string          `json:"channel_type"`
	DisplayName   string          `json:"display_name"`
	Credentials   json.RawMessage `json:"credentials"`
	Settings      json.RawMessage `json:"settings"`
	WebhookSecret string          `json:"webhook_secret"`
	PublicURL     string          `json:"public_url"`
	ReturnURL     string          `json:"return_url"`
}

// adminInstallCreate begins a one-click install: 201 with the platform's
// consent page (authorize_url), the callback to register with the
// platform (redirect_uri) and when the link stops working.
func (s *Server) adminInstallCreate(w http.ResponseWriter, r *http.Request) {
	if s.installs == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "installs need the master key (MIO_MASTER_KEY)")
		return
	}
	var req installRequest
	if !decodeAdmin(w, r, &req) {
		return
	}
	if req.TenantID == uuid.Nil {
		writeError(w, http.StatusBadRequest, "bad_request", "tenant_id is required")
		return
	}
	begun, err := s.installs.Begin(r.Context(), install.BeginParams{TenantID: req.TenantID, ChannelType: req.ChannelType,
		DisplayName: req.DisplayName, Credentials: req.Credentials, Settings: req.Settings,
		WebhookSecret: req.WebhookSecret, PublicURL: req.PublicURL, ReturnURL: req.ReturnURL,
		Actor: s.adminService(r).Actor()})
	switch {
	case errors.Is(err, install.ErrInvalid), errors.Is(err, install.ErrNotInstallable):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case err != nil:
		s.adminError(w, r, "begin install", err)
	default:
		writeJSON(w, http.StatusCreated, begun)
	}
}

// installPage is the page the browser lands on after an install.
var installPage = template.Must(template.New("install").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} — MIO</title></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

type installPageData struct{ Title, Text string }

// installCallback is where a platform sends the browser back after its
// consent page: no bearer token, the state authenticates. Success is a
// 303 to the install's return URL (with account_id) or a page naming the
// account; a state that is forged, expired or used is 400 and nothing is
// exchanged or written.
func (s *Server) installCallback(w http.ResponseWriter, r *http.Request) {
	if s.installs == nil {
		s.installAnswer(w, http.StatusServiceUnavailable, "Install unavailable", "This MIO has no master key configured.")
		return
	}
	channel := chi.URLParam(r, "channel_type")
	res, err := s.installs.Complete(r.Context(), channel, r.URL.Query())
	var refused *channels.InstallRefusedError
	var transient *channels.TransientError
	var rateLimited *channels.RateLimitedError
	var permanent *channels.PermanentError
	switch {
	case err == nil:
	case errors.Is(err, install.ErrState):
		s.installAnswer(w, http.StatusBadRequest, "Install link invalid",
			"This install link is invalid, has expired (links work for ten minutes) or was used already. Begin the install again.")
		return
	case errors.As(err, &refused):
		s.installAnswer(w, http.StatusBadRequest, "Install not completed", "The platform did not grant the install: "+refused.Reason+".")
		return
	case errors.Is(err, install.ErrInvalid):
		s.installAnswer(w, http.StatusBadRequest, "Install not completed", err.Error())
		return
	case errors.As(err, &transient), errors.As(err, &rateLimited):
		s.log.Warn("install: platform unavailable", "channel_type", channel, "err", err)
		s.installAnswer(w, http.StatusBadGateway, "Install not completed", "The platform could not be reached; open the install link again.")
		return
	case errors.As(err, &permanent):
		s.log.Warn("install: platform refused the code", "channel_type", channel, "err", err)
		s.installAnswer(w, http.StatusBadGateway, "Install not completed", "The platform refused the exchange: "+permanent.Error())
		return
	default:
		if s.clientGone(r, "install callback", err) {
			return
		}
		s.log.Error("install callback", "channel_type", channel, "err", err)
		s.installAnswer(w, http.StatusInternalServerError, "Install not completed", "Internal error.")
		return
	}
	if res.ReturnURL != "" {
		if u, err := url.Parse(res.ReturnURL); err == nil {
			q := u.Query()
			q.Set("account_id", res.AccountID.String())
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
	}
	verb := "installed"
	if !res.Created {
		verb = "updated"
	}
	s.installAnswer(w, http.StatusOK, "Installed", "Account "+res.DisplayName+" ("+res.ChannelType+", "+res.AccountID.String()+") "+verb+".")
}

func (s *Server) installAnswer(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_ = installPage.Execute(w, installPageData{Title: title, Text: text})
}
