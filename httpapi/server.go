// Package httpapi is MIO's HTTP surface: the public listener (webhooks,
// the /v1 API, health) and the admin listener (metrics, admin API). The
// whole route table is in routes.go. Handlers decode, validate, call the
// data layer and respond; HTTP status codes are decided here and nowhere
// else.
package httpapi

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/metrics"
)

// Deps are what the HTTP layer needs from the process.
type Deps struct {
	Pool    *pgxpool.Pool
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// SchemaCheck returns an error when the schema is not current; /readyz
	// reports it. Nil skips the check.
	SchemaCheck func(ctx context.Context) error
}

// Server holds the handlers of both listeners.
type Server struct {
	pool        *pgxpool.Pool
	metrics     *metrics.Metrics
	log         *slog.Logger
	schemaCheck func(ctx context.Context) error
}

// New returns a Server.
func New(d Deps) *Server {
	return &Server{pool: d.Pool, metrics: d.Metrics, log: d.Logger, schemaCheck: d.SchemaCheck}
}
