package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// MessageKnown reports whether id names a message (outbound, inbound) or
// an attachment of tenantID, or of any tenant when tenantID is uuid.Nil:
// it tells "no longer a dead letter" from "never existed".
func MessageKnown(ctx context.Context, pool *pgxpool.Pool, tenantID, id uuid.UUID) (bool, error) {
	tenants, err := tenantsOrOne(ctx, pool, tenantID)
	if err != nil {
		return false, err
	}
	for _, t := range tenants {
		var known bool
		err := InTenantTx(ctx, pool, t, func(tx pgx.Tx) error {
			k, err := queries().MessageKnown(ctx, tx, &dbsqlc.MessageKnownParams{TenantID: t, ID: id})
			known = k.Valid && k.Bool
			return translate(err)
		})
		if err != nil || known {
			return known, err
		}
	}
	return false, nil
}
