package db

import (
	"context"

	"github.com/google/uuid"

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
	return queryIDs(ctx, tx, sql, args)
}
