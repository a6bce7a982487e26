// Package workers holds MIO's background jobs (one job kind per file) and
// builds the River client that runs them. River's tables live in the
// "river" schema; jobs are inserted with InsertTx inside the same
// transaction as the rows they act on.
//
// Internal to MIO; not a stable API.
package workers

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/migrations"
)

// Config configures the River client.
type Config struct {
	// Logger receives River's logs.
	Logger *slog.Logger
	// Work makes the client work jobs; false builds an insert-only client
	// (the api role).
	Work bool
	// MaxWorkers per queue. Default 50.
	MaxWorkers int
	// FetchCooldown between fetches. Default 10ms (River's 100ms default
	// caps throughput at MaxWorkers per 100ms). River also uses it, in
	// every client, working or insert-only, as the least time between two
	// insert notifications of a queue (a job inserted inside that window
	// is not announced: it waits for the next announced insert or the
	// 1 s poll), so insert-only clients take it too.
	FetchCooldown time.Duration
	// PollOnly makes River poll for jobs instead of LISTENing: needed
	// when the pool goes through a transaction pooler (PgBouncer in
	// transaction mode), where LISTEN hears nothing.
	PollOnly bool
	// RescueStuckJobsAfter is how long a job may stay running before
	// River's rescuer takes it back for a retry (its process died): a job
	// whose worker sets a longer Timeout (the dispatch job,
	// Dispatcher.JobTimeout) is taken back only once that has passed.
	// Default RescueStuckJobsAfterDefault.
	RescueStuckJobsAfter time.Duration
	// TracerProvider, when tracing is on, makes every job run a span
	// (otelriver) continuing the trace its job carries (job_trace.go);
	// nil: no spans.
	TracerProvider trace.TracerProvider
}

// RescueStuckJobsAfterDefault is when River's rescuer takes back a job
// left running by a process that died: River's job timeout (1 min, which
// cancels a live run before) plus 15 s. Jobs whose worker sets a longer
// Timeout wait for it; River's rescuer runs every 30 s.
const RescueStuckJobsAfterDefault = river.JobTimeoutDefault + 15*time.Second

// Set is the process's worker set and periodic jobs; cmd builds it.
type Set struct {
	Workers  *river.Workers
	Periodic []*river.PeriodicJob
	Queues   map[string]river.QueueConfig
	count    int
}

// NewSet returns an empty worker set.
func NewSet() *Set {
	return &Set{Workers: river.NewWorkers(), Queues: map[string]river.QueueConfig{}}
}

// Len is the number of registered workers.
func (s *Set) Len() int { return s.count }

// addWorker registers w on queue with maxWorkers.
func addWorker[T river.JobArgs](s *Set, w river.Worker[T], queue string, maxWorkers int) {
	river.AddWorker(s.Workers, w)
	if _, ok := s.Queues[queue]; !ok {
		s.Queues[queue] = river.QueueConfig{MaxWorkers: maxWorkers}
	}
	s.count++
}

// NewClient builds the River client on pool. When cfg.Work is false or
// the set has no workers, the client is insert-only.
func NewClient(pool *pgxpool.Pool, set *Set, cfg Config) (*river.Client[pgx.Tx], error) {
	if cfg.FetchCooldown == 0 {
		cfg.FetchCooldown = 10 * time.Millisecond
	}
	if cfg.RescueStuckJobsAfter <= 0 {
		cfg.RescueStuckJobsAfter = RescueStuckJobsAfterDefault
	}
	rc := &river.Config{
		FetchCooldown:        cfg.FetchCooldown,
		Logger:               cfg.Logger,
		Schema:               migrations.RiverSchema,
		PollOnly:             cfg.PollOnly,
		RescueStuckJobsAfter: cfg.RescueStuckJobsAfter,
		Middleware:           jobMiddleware(cfg.TracerProvider),
	}
	if !cfg.PollOnly {
		// Without LISTEN no producer hears a notification.
		rc.Hooks = []rivertype.Hook{newInsertWake(pool, cfg.FetchCooldown, cfg.Logger)}
	}
	if cfg.Work && set != nil && set.Len() > 0 {
		rc.Workers = set.Workers
		rc.Queues = set.Queues
		rc.PeriodicJobs = set.Periodic
	}
	return river.NewClient(riverpgxv5.New(pool), rc)
}

// Works reports whether a client built from set with cfg works jobs.
func Works(set *Set, cfg Config) bool { return cfg.Work && set != nil && set.Len() > 0 }
