package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// Tenant is one customer of MIO; everything else belongs to a tenant.
type Tenant struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}

func tenantFrom(r dbsqlc.MioTenant) *Tenant {
	return &Tenant{ID: r.ID, Name: r.Name, Status: r.Status, CreatedAt: r.CreatedAt}
}

// TenantInsert creates a tenant. A zero id is replaced with a new one.
func TenantInsert(ctx context.Context, tx DBTX, id uuid.UUID, name string) (*Tenant, error) {
	if id == uuid.Nil {
		id = uuid.New()
	}
	r, err := queries().TenantInsert(ctx, tx, &dbsqlc.TenantInsertParams{ID: id, Name: name})
	if err != nil {
		return nil, translate(err)
	}
	return tenantFrom(r), nil
}

// TenantCreate creates a tenant named name unless a tenant of that name
// exists, compared case-insensitively: then it returns that tenant and
// created is false. Call it in a transaction: a concurrent create of the
// same name is waited for, and its tenant returned once it commits.
func TenantCreate(ctx context.Context, tx DBTX, name string) (t *Tenant, created bool, err error) {
	r, err := queries().TenantInsertNew(ctx, tx, &dbsqlc.TenantInsertNewParams{ID: uuid.New(), Name: name})
	if err == nil {
		return tenantFrom(r), true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, translate(err)
	}
	r, err = queries().TenantGetByName(ctx, tx, &dbsqlc.TenantGetByNameParams{Name: name})
	if err != nil {
		return nil, false, translate(err)
	}
	return tenantFrom(r), false, nil
}

// TenantGet returns one tenant.
func TenantGet(ctx context.Context, tx DBTX, id uuid.UUID) (*Tenant, error) {
	r, err := queries().TenantGet(ctx, tx, &dbsqlc.TenantGetParams{ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return tenantFrom(r), nil
}

// TenantList returns every tenant, oldest first.
func TenantList(ctx context.Context, tx DBTX) ([]*Tenant, error) {
	rows, err := queries().TenantList(ctx, tx)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Tenant, len(rows))
	for i, r := range rows {
		out[i] = tenantFrom(r)
	}
	return out, nil
}
