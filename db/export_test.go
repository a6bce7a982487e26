package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// InboxInsertFull runs InboxInsertBatch's full statement (with the edit
// look-ups) whatever the rows, for tests that hold the plain statement to
// its results.
func InboxInsertFull(ctx context.Context, tx DBTX, tenantID uuid.UUID, rows []InboxRow) ([]uuid.UUID, error) {
	sql, args := inboxInsert(tenantID, rows)
	if sql == dbsqlc.InboxInsertBatchPlain {
		sql, args = dbsqlc.InboxInsertBatch, append(args, make([]string, len(rows)))
	}
	r, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	return pgx.CollectRows(r, pgx.RowTo[uuid.UUID])
}
