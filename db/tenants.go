package db

import (
	"context"
	"time"

	"github.com/google/uuid"

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
