package httpapi

import (
	"net/http"
	"net/http/pprof"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/httpapi/openapi"
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

	// One-click installs (install.go): the platform sends the browser back
	// here after its consent page; the signed state authenticates.
	r.Get("/install/{channel_type}/callback", s.installCallback)

	// MCP (Model Context Protocol) for agents, Streamable HTTP (mcp.go):
	// the same token and roles as /v1.
	r.Post("/mcp", s.mcpHandler().ServeHTTP)

	// The agent API: bearer token, tenant-scoped.
	r.Route("/v1", func(r chi.Router) {
		r.Get("/openapi.json", s.openapiDoc(openapi.Public)) // no token: the API's description
		r.With(s.authenticate(db.RoleRead, db.RoleConsume)).Get("/messages/{id}", s.getMessage)
		r.With(s.authenticate(db.RoleRead, db.RoleConsume)).Get("/attachments/{id}", s.getAttachment)

		// Replies to the platforms (outbound.go).
		r.With(s.authenticate(db.RoleProduce)).Post("/outbound", s.postOutbound)
		r.With(s.authenticate(db.RoleProduce)).Post("/outbound/batch", s.postOutboundBatch)
		r.With(s.authenticate(db.RoleRead, db.RoleProduce)).Get("/outbound", s.listOutbound)
		r.With(s.authenticate(db.RoleRead, db.RoleProduce)).Get("/outbound/{id}", s.getOutbound)
		r.With(s.authenticate(db.RoleProduce)).Post("/outbound/{id}/resend", s.resendOutbound)
		r.With(s.authenticate(db.RoleProduce)).Post("/outbound/{id}/append", s.appendOutbound)
		r.With(s.authenticate(db.RoleProduce)).Post("/outbound/{id}/finish", s.finishOutbound)
		// Reactions to platform messages, sent through the outbox (reactions.go).
		r.With(s.authenticate(db.RoleProduce)).Post("/reactions", s.postReaction)
		// Typing signals (typing.go): best effort, at once, never queued.
		r.With(s.authenticate(db.RoleProduce)).Post("/conversations/typing", s.postTyping)
		// A conversation's history, both directions (conversations.go).
		r.With(s.authenticate(db.RoleRead)).Get("/conversations/{account_id}/{conversation_id}/messages", s.getConversationMessages)

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
			r.Post("/reply", s.postReply) // reply.go: ack + send in one transaction
		})
	})
	return s.traced(r, nil)
}

// AdminHandler is the admin listener's route table.
func (s *Server) AdminHandler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.adminSpan, s.recoverer, s.adminAllowed) // admin_listener.go: MIO_ADMIN_ALLOW_CIDRS
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
	r.With(s.adminAuth(db.AdminRoleOperator)).Post("/admin/v1/dead-letters/requeue", s.adminDeadBulk(admin.DeadRequeue))
	r.With(s.adminAuth(db.AdminRoleOperator)).Post("/admin/v1/dead-letters/discard", s.adminDeadBulk(admin.DeadDiscard))
	s.adminRoutes(r)
	// Profiling: off unless configured, then for operator tokens only.
	if s.pprof {
		r.Route("/debug/pprof", func(r chi.Router) {
			r.Use(s.adminAuth(db.AdminRoleOperator))
			r.HandleFunc("/*", pprof.Index)
			r.HandleFunc("/cmdline", pprof.Cmdline)
			r.HandleFunc("/profile", pprof.Profile)
			r.HandleFunc("/symbol", pprof.Symbol)
			r.HandleFunc("/trace", pprof.Trace)
		})
	}
	// The web console (package console) at /, signed in by cookie.
	if s.console != nil {
		r.Mount("/", s.console)
	}
	return s.traced(r, scrapeOrProbe)
}

// adminRoutes is the /admin/v1 operator API (admin_api.go). Viewers read;
// operators change tenants, accounts' settings and status, API tokens,
// consumers and dead letters; credential-admins create accounts with
// secrets, rotate secrets and manage admin tokens. Every mutation is
// written to mio.audit_log.
func (s *Server) adminRoutes(r chi.Router) {
	viewer, operator, credAdmin := s.adminAuth(db.AdminRoleViewer), s.adminAuth(db.AdminRoleOperator),
		s.adminAuth(db.AdminRoleCredentialAdmin)
	r.Route("/admin/v1", func(r chi.Router) {
		r.Get("/openapi.json", s.openapiDoc(openapi.Admin)) // no token: the API's description
		r.With(viewer).Get("/tenants", s.adminTenantList)
		r.With(operator).Post("/tenants", s.adminTenantCreate)
		r.With(viewer).Get("/tenants/{tenant_id}", s.adminTenantShow)
		r.With(operator).Post("/tenants/{tenant_id}/disable", s.adminTenantStatus(db.TenantDisabled))
		r.With(operator).Post("/tenants/{tenant_id}/enable", s.adminTenantStatus(db.TenantActive))

		r.With(viewer).Get("/tenants/{tenant_id}/accounts", s.adminAccountList)
		r.With(credAdmin).Post("/tenants/{tenant_id}/accounts", s.adminAccountCreate)
		r.With(viewer).Get("/accounts/{account_id}", s.adminAccountShow)
		r.With(operator).Patch("/accounts/{account_id}", s.adminAccountUpdate)
		r.With(operator).Post("/accounts/{account_id}/disable", s.adminAccountStatus(db.AccountDisabled))
		r.With(operator).Post("/accounts/{account_id}/enable", s.adminAccountStatus(db.AccountActive))
		r.With(credAdmin).Post("/accounts/{account_id}/rotate-webhook-secret", s.adminAccountRotateSecret)
		r.With(credAdmin).Post("/accounts/{account_id}/rotate-credentials", s.adminAccountRotateCredentials)
		// One-click installs (install.go): the app's client secret is
		// sealed and the account created with secrets, as above.
		r.With(credAdmin).Post("/installs", s.adminInstallCreate)

		r.With(viewer).Get("/tenants/{tenant_id}/tokens", s.adminTokenList)
		r.With(operator).Post("/tenants/{tenant_id}/tokens", s.adminTokenCreate)
		r.With(operator).Post("/tenants/{tenant_id}/tokens/{token_id}/revoke", s.adminTokenRevoke)

		r.With(credAdmin).Get("/admin-tokens", s.adminAdminTokenList)
		r.With(credAdmin).Post("/admin-tokens", s.adminAdminTokenCreate)
		r.With(credAdmin).Post("/admin-tokens/{token_id}/revoke", s.adminAdminTokenRevoke)

		r.With(viewer).Get("/consumers", s.adminConsumerList)
		r.With(viewer).Get("/tenants/{tenant_id}/consumers/{name}", s.adminConsumerShow)
		r.With(operator).Delete("/tenants/{tenant_id}/consumers/{name}", s.adminConsumerDelete)
		r.With(operator).Post("/tenants/{tenant_id}/consumers/{name}/seek", s.adminConsumerSeek)

		r.With(viewer).Get("/tenants/{tenant_id}/outbound", s.adminOutboundSearch)
		r.With(viewer).Get("/tenants/{tenant_id}/tail", s.adminTail)

		r.With(viewer).Get("/queue-health", s.adminQueueHealth)
		r.With(viewer).Get("/channel-types", s.adminChannelTypes)
		r.With(viewer).Get("/audit", s.adminAuditList)
	})
}
