// Package sources runs the channels' long-running inbound sources: every
// registered channel that implements channels.Source (the Discord
// Gateway, Telegram long polling), each given a channels.SourceStore over
// the database — tenant transactions, the lease and cursor tables, the
// ingest path's dedup. cmd/mio runs it in the processes with the worker
// role; it names no channel.
//
// Internal to MIO; not a stable API.
package sources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/tracing"
)

// Config is what the sources share.
type Config struct {
	Pool     *pgxpool.Pool
	Accounts *accounts.Resolver
	// CatchUp asks for an at-once history read of one account (mio serve
	// enqueues a reconciler run); nil: none.
	CatchUp func(tenantID, accountID uuid.UUID)
	// Holder names this process in the leases. Default a random id.
	Holder   uuid.UUID
	Ingester *ingest.Ingester
	Logger   *slog.Logger
	// Metrics counts stored and duplicate messages; nil counts nowhere.
	Metrics *metrics.Metrics
	// Registerer takes the sources' own metric families; nil: not
	// registered.
	Registerer prometheus.Registerer
	Registry   *channels.Registry
	// TracerProvider, when tracing is on, makes every message a source
	// receives a span of its own trace (Store.Ingest); nil: no spans.
	TracerProvider trace.TracerProvider
}

// Run runs every source of the registry until ctx ends and returns once
// all have stopped (their sessions commit through the ingester: stop
// them before it), with the errors they ended with.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Holder == uuid.Nil {
		cfg.Holder = uuid.New()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, ct := range cfg.Registry.Types() {
		ch, _ := cfg.Registry.Get(ct)
		src, ok := ch.(channels.Source)
		if !ok {
			continue
		}
		store := NewStore(cfg.Pool, cfg.Accounts, cfg.Ingester, cfg.Metrics, ct)
		store.tracer = tracing.Tracer(cfg.TracerProvider)
		deps := channels.SourceDeps{
			Holder:  cfg.Holder,
			Store:   store,
			CatchUp: cfg.CatchUp, Metrics: cfg.Registerer,
			Logger: cfg.Logger.With("channel_type", ct),
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.RunSource(ctx, deps); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s source: %w", ct, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
