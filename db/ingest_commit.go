package db

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// IngestGroup is one tenant's rows within a group commit.
type IngestGroup struct {
	TenantID uuid.UUID
	Rows     []InboxRow
	Events   []ProviderEvent
}

// IngestGroupResult is what one group committed.
type IngestGroupResult struct {
	Inserted  []uuid.UUID
	NewEvents int64
}

// ingestSettings scopes the statements after it to a tenant, without JIT:
// estimated over its array parameters, InboxInsertBatch's generic plan's
// cost would cross JIT's thresholds (compiling took ~500 ms where running
// takes 1). Its generic plan is as good as its custom ones (every lookup a
// primary-key probe per row) and takes 0.06 ms to reuse against 0.3-0.5 ms
// to plan anew, a tenth of the statement's cost at ten rows: the inbox
// inserts read their values through sub-selects no plan can see, so a
// custom plan costs what the generic one does and the server keeps the
// generic plan from a connection's sixth execution on, with no
// plan_cache_mode setting (TestIngestKeepsGenericPlans).
const ingestSettings = "SELECT set_config('app.current_tenant_id', $1, true), set_config('jit', 'off', true)"

// IngestCommit commits several tenants' inbox rows and receipts in one
// transaction and ONE network round trip: per tenant the tenant setting
// and its inserts, pipelined up to a single Sync. Without BEGIN and
// COMMIT PostgreSQL runs everything up to the Sync as one implicit
// transaction, committed at the Sync (two statements fewer a commit: ~3 %
// of PostgreSQL's time a 14-webhook transaction); the settings, set
// local, hold until then. Any failure rolls the whole transaction back
// (TestIngestCommitAllOrNothing).
func IngestCommit(ctx context.Context, pool *pgxpool.Pool, groups []IngestGroup) ([]IngestGroupResult, error) {
	results := make([]IngestGroupResult, len(groups))
	b := &pgx.Batch{}
	for i, g := range groups {
		b.Queue(ingestSettings, g.TenantID.String())
		if len(g.Rows) > 0 {
			sql, args := inboxInsert(g.TenantID, g.Rows)
			b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
				ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
				results[i].Inserted = ids
				return err
			})
		}
		if len(g.Events) > 0 {
			p := providerEventParams(g.TenantID, g.Events)
			b.Queue(dbsqlc.ProviderEventInsertBatch, p.TenantID, p.AccountIds, p.ProviderMessageIds, p.Statuses,
				p.OccurredAts, p.RecipientIds, p.Errors, p.Raws).Exec(func(ct pgconn.CommandTag) error {
				results[i].NewEvents = ct.RowsAffected()
				return nil
			})
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		// PostgreSQL rolls a failed implicit transaction back at the
		// Sync. A batch that failed before its Sync went out (an argument
		// that would not encode) may have left one open: abandon rolls it
		// back or closes the connection (after a Sync, its ROLLBACK only
		// draws a warning).
		abandon(conn)
		return nil, fmt.Errorf("ingest commit: %w", translate(err))
	}
	return results, nil
}
