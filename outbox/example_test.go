package outbox_test

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// A reply sent in the caller's transaction commits together with the
// caller's other writes — or not at all.
func ExampleService_SendTx() {
	var (
		ctx    = context.Background()
		pool   *pgxpool.Pool   // the runtime pool (db.Open)
		sends  *outbox.Service // outbox.New(pool, riverClient)
		tenant uuid.UUID
		reply  *envelope.SendCommand
	)
	tx, err := db.BeginTenant(ctx, pool, tenant)
	if err != nil {
		return
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := sends.SendTx(ctx, tx, tenant, reply); err != nil {
		return // a *ValidationError, outbox.ErrKeyConflict, …
	}
	// … other writes of the same transaction (say, settling the inbound
	// message the reply answers) …
	_ = tx.Commit(ctx)
}
