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
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
	"github.com/miohq/mio/outbox"
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
	blob            blob.Store
	attachmentTTL   time.Duration
	adminTokens     adminTokens // admin listener bearer tokens (admin_auth.go)
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
	return s
}
