package httpapi

import (
	"net/http"
	"net/http/pprof"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
)

// PublicHandler is the public listener's route table.
func (s *Server) PublicHandler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.instrument, s.recoverer)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such route")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this route")
	})

	r.Get("/livez", s.livez)
	r.Get("/healthz", s.livez)
	r.Get("/readyz", s.readyz)

	// Inbound webhooks (and platform handshakes: Meta's is a GET).
	r.Post("/webhooks/{channel_type}/{account_id}", s.webhook)
	r.Get("/webhooks/{channel_type}/{account_id}", s.webhook)

	// The agent API: bearer token, tenant-scoped.
	r.Route("/v1", func(r chi.Router) {
		r.With(s.authenticate(db.RoleRead, db.RoleConsume)).Get("/messages/{id}", s.getMessage)
		r.With(s.authenticate(db.RoleRead, db.RoleConsume)).Get("/attachments/{id}", s.getAttachment)

		// Replies to the platforms (outbound.go).
		r.With(s.authenticate(db.RoleProduce)).Post("/outbound", s.postOutbound)
		r.With(s.authenticate(db.RoleRead, db.RoleProduce)).Get("/outbound", s.listOutbound)
		r.With(s.authenticate(db.RoleRead, db.RoleProduce)).Get("/outbound/{id}", s.getOutbound)
		r.With(s.authenticate(db.RoleProduce)).Post("/outbound/{id}/resend", s.resendOutbound)

		r.Route("/consumers/{name}", func(r chi.Router) {
			r.Use(s.authenticate(db.RoleConsume))
			r.Put("/", s.putConsumer)
			r.Get("/", s.getConsumer)
			r.Delete("/", s.deleteConsumer)
			r.Post("/pull", s.pull)
			r.Post("/ack", s.settle(consume.ActionAck))
			r.Post("/nak", s.settle(consume.ActionNak))
			r.Post("/term", s.settle(consume.ActionTerm))
			r.Post("/extend", s.settle(consume.ActionExtend))
		})
	})
	return r
}

// AdminHandler is the admin listener's route table.
func (s *Server) AdminHandler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.recoverer)
	r.Handle("/metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{Registry: s.metrics.Registry}))
	// Probes here too: a worker or bridge replica has only this listener.
	r.Get("/livez", s.livez)
	r.Get("/healthz", s.livez)
	r.Get("/readyz", s.readyz)
	// Dead letters (admin_dead.go): viewers read, operators requeue and discard.
	r.With(s.adminAuth(db.AdminRoleViewer)).Get("/admin/v1/dead-letters", s.adminDeadList)
	r.With(s.adminAuth(db.AdminRoleViewer)).Get("/admin/v1/dead-letters/{id}", s.adminDeadShow)
	r.With(s.adminAuth(db.AdminRoleOperator)).Post("/admin/v1/dead-letters/{id}/requeue", s.adminDeadRequeue)
	r.With(s.adminAuth(db.AdminRoleOperator)).Post("/admin/v1/dead-letters/{id}/discard", s.adminDeadDiscard)
	// Profiling for operators (the admin listener is loopback by default).
	r.HandleFunc("/debug/pprof/*", pprof.Index)
	r.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	r.HandleFunc("/debug/pprof/profile", pprof.Profile)
	r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return r
}
