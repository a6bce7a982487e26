package workers

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/db"
)

// EnqueueOutbound inserts queued outbox rows of one tenant, their first
// events and their dispatch jobs in transaction tx (whose tenant must be
// tenantID), and returns the rows inserted. Rows whose idempotency key
// the tenant already used are not inserted; their jobs are, so a caller
// that got fewer rows than it gave must roll tx back (the API does, then
// answers with the existing message).
func EnqueueOutbound(ctx context.Context, tx pgx.Tx, client *river.Client[pgx.Tx], tenantID uuid.UUID, rows []db.OutboxNew) ([]db.OutboxInserted, error) {
	params := make([]river.InsertManyParams, len(rows))
	for i := range rows {
		if rows[i].ID == uuid.Nil {
			rows[i].ID = db.NewOutboxID()
		}
		params[i] = river.InsertManyParams{Args: DispatchArgs{TenantID: tenantID, OutboxID: rows[i].ID, AccountID: rows[i].AccountID}}
	}
	jobs, err := client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return nil, fmt.Errorf("enqueue dispatch: %w", err)
	}
	for i := range rows {
		rows[i].JobID = jobs[i].Job.ID
	}
	ins, err := db.OutboxInsertBatch(ctx, tx, tenantID, rows)
	if err != nil {
		return nil, fmt.Errorf("insert outbox: %w", err)
	}
	return ins, nil
}
