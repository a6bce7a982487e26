package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

// TestNoSessionStateLeaks: every statement of the runtime pool runs as the
// runtime role, and a tenant set in one transaction is gone in the next,
// whichever server session serves it. Run under MIO_TEST_PGBOUNCER=1 it
// checks the same through PgBouncer in transaction pooling mode, where
// consecutive transactions of one client land on different sessions.
func TestNoSessionStateLeaks(t *testing.T) {
	env := dbtest.New(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				tenant := uuid.New()
				if err := db.InTenantTx(ctx, env.Pool, tenant, func(tx pgx.Tx) error {
					var got string
					if err := tx.QueryRow(ctx, "SELECT current_setting('app.current_tenant_id')").Scan(&got); err != nil {
						return err
					}
					if got != tenant.String() {
						return fmt.Errorf("tenant %s in its own transaction, want %s", got, tenant)
					}
					return nil
				}); err != nil {
					errs <- err
					return
				}
				var user, leaked string
				var bypass bool
				if err := env.Pool.QueryRow(ctx, `SELECT current_user, coalesce(current_setting('app.current_tenant_id', true), ''),
					(SELECT rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = current_user)`).Scan(&user, &leaked, &bypass); err != nil {
					errs <- err
					return
				}
				switch {
				case user != dbtest.RuntimeRole:
					errs <- fmt.Errorf("statement ran as %s, want %s", user, dbtest.RuntimeRole)
					return
				case bypass:
					errs <- fmt.Errorf("%s bypasses row-level security", user)
					return
				case leaked != "":
					errs <- fmt.Errorf("tenant setting %s outlived its transaction", leaked)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
