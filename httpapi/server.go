// Package httpapi is MIO's HTTP surface: the public listener (webhooks,
// the /v1 API, health) and the admin listener (metrics, admin API). The
// whole route table is in routes.go. Handlers decode, validate, call the
// services (ingest, consume, outbox) or the data layer and respond; HTTP
// status codes are decided here and nowhere else.
//
// Internal to MIO; not a stable API.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/install"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/reply"
	"github.com/miohq/mio/tracing"
	"github.com/miohq/mio/typing"
)

// Deps are what the HTTP layer needs from the process.
type Deps struct {
	Pool    *pgxpool.Pool
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// SchemaCheck returns an error when the schema is not current; /readyz
	// reports it. Nil skips the check.
	SchemaCheck func(ctx context.Context) error
	// BridgeReady, set in a bridge-only process, returns an error while
	// the NATS bridge cannot publish; /readyz reports it. Nil: not checked.
	BridgeReady func() error
	// Registry, Accounts and Ingester serve webhooks.
	Registry *channels.Registry
	Accounts *accounts.Resolver
	Ingester *ingest.Ingester
	// Outbox serves /v1/outbound; nil serves reads only (sends and
	// resends answer 503: outbound dispatch is not configured).
	Outbox *outbox.Service
	// Hub wakes long-polling consumers.
	Hub *notify.Hub
	// Consumers serves the pull API.
	Consumers *consume.Service
	// Replies serves replies with ack; default: built from Consumers and
	// Outbox when Consumers is set.
	Replies *reply.Service
	// Typing sends typing signals; default: built from Accounts when set.
	Typing *typing.Service
	// WebhookDeadline bounds every webhook request. Default 2.5s.
	WebhookDeadline time.Duration
	// WebhookMaxBody is the largest webhook body. Default 1 MiB.
	WebhookMaxBody int64
	// Blob is the store GET /v1/attachments/{id} reads; nil answers 503.
	Blob blob.Store
	// AttachmentURLTTL, when positive and Blob implements blob.URLSigner,
	// makes GET /v1/attachments/{id} redirect to a signed URL valid this
	// long instead of streaming the bytes. Default 0 (stream).
	AttachmentURLTTL time.Duration
	// Admin serves /admin/v1; nil: one on Pool without master key (account
	// secrets cannot be set) nor public URL.
	Admin *admin.Service
	// AdminAllowCIDRs are the client networks the admin listener answers;
	// others get 403. Empty: loopback only.
	AdminAllowCIDRs []netip.Prefix
	// Pprof serves /debug/pprof on the admin listener to operator admin
	// tokens. Default off.
	Pprof bool
	// Console, when set, is served at / on the admin listener (behind
	// its allow-list; the routes above take precedence).
	Console http.Handler
	// MCPAllowedOrigins are the browser origins (scheme://host[:port])
	// /mcp answers; a request with another Origin header is refused, one
	// without passes. Default none.
	MCPAllowedOrigins []string
	// Version is reported to MCP clients. Default "dev".
	Version string
	// TracerProvider traces the public listener's requests (a server span
	// each, continuing an incoming traceparent) and what they start.
	// Nil or a no-op provider: no spans, no cost.
	TracerProvider trace.TracerProvider
	// Installs serves one-click installs (POST /admin/v1/installs and the
	// public /install/{channel}/callback); nil answers 503.
	Installs *install.Service
}

// Server holds the handlers of both listeners.
type Server struct {
	pool        *pgxpool.Pool
	metrics     *metrics.Metrics
	log         *slog.Logger
	schemaCheck func(ctx context.Context) error
	bridgeReady func() error

	registry        *channels.Registry
	accounts        *accounts.Resolver
	ingester        *ingest.Ingester
	webhookDeadline time.Duration
	webhookMaxBody  int64
	tokens          *tokenCache
	outbox          *outbox.Service
	hub             *notify.Hub
	consumers       *consume.Service
	replies         *reply.Service
	typing          *typing.Service
	blob            blob.Store
	attachmentTTL   time.Duration
	adminTokens     adminTokens // admin listener bearer tokens (admin_auth.go)
	admin           *admin.Service
	adminAllow      []netip.Prefix
	pprof           bool
	console         http.Handler
	mcpOrigins      map[string]bool
	version         string
	tracerProvider  trace.TracerProvider // nil when not tracing
	installs        *install.Service
}

// New returns a Server.
func New(d Deps) *Server {
	if d.WebhookDeadline == 0 {
		d.WebhookDeadline = 2500 * time.Millisecond
	}
	if d.WebhookMaxBody == 0 {
		d.WebhookMaxBody = 1 << 20
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Outbox == nil {
		d.Outbox = outbox.New(d.Pool, nil)
	}
	s := &Server{pool: d.Pool, metrics: d.Metrics, log: d.Logger, schemaCheck: d.SchemaCheck, bridgeReady: d.BridgeReady,
		registry: d.Registry, accounts: d.Accounts, ingester: d.Ingester,
		webhookDeadline: d.WebhookDeadline, webhookMaxBody: d.WebhookMaxBody,
		tokens: newTokenCache(5 * time.Second), outbox: d.Outbox, hub: d.Hub, consumers: d.Consumers}
	s.blob, s.attachmentTTL = d.Blob, d.AttachmentURLTTL
	s.admin, s.pprof = d.Admin, d.Pprof
	s.console, s.installs = d.Console, d.Installs
	s.mcpOrigins, s.version = map[string]bool{}, d.Version
	for _, o := range d.MCPAllowedOrigins {
		s.mcpOrigins[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	if tracing.Tracer(d.TracerProvider) != nil {
		s.tracerProvider = d.TracerProvider
	}
	s.adminAllow = d.AdminAllowCIDRs
	if len(s.adminAllow) == 0 {
		s.adminAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	if s.admin == nil {
		s.admin = admin.New(d.Pool, nil, "")
	}
	if d.Replies == nil && d.Consumers != nil {
		d.Replies = reply.New(d.Pool, d.Consumers, d.Outbox)
	}
	s.replies = d.Replies
	if d.Typing == nil && d.Accounts != nil {
		var signals *prometheus.CounterVec
		if d.Metrics != nil {
			signals = metrics.NewTyping(d.Metrics.Registry)
		}
		d.Typing = typing.New(d.Accounts, typing.Options{Signals: signals})
	}
	s.typing = d.Typing
	return s
}
