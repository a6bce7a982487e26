package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db"
)

// cmdAdminTenantNATS answers `mio admin tenant nats --tenant ID on|off`:
// whether the NATS bridge publishes the tenant (docs/nats.md, opt-out).
func cmdAdminTenantNATS(ctx context.Context, pool *pgxpool.Pool, a *adminArgs, stdout io.Writer) error {
	tid, err := a.tenantID()
	if err != nil {
		return err
	}
	if len(a.positional) != 1 || (a.positional[0] != "on" && a.positional[0] != "off") {
		return &usageError{"give on or off"}
	}
	publish := a.positional[0] == "on"
	err = db.InTenantTx(ctx, pool, tid, func(tx pgx.Tx) error {
		if _, err := db.TenantGet(ctx, tx, tid); err != nil {
			return err
		}
		return db.BridgePublishSet(ctx, tx, tid, publish)
	})
	if errors.Is(err, db.ErrNotFound) {
		return &usageError{"no such tenant " + tid.String()}
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"tenant_id": tid, "nats_publish": publish})
}
