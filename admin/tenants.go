package admin

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// TenantCreate creates a tenant. Names are unique, compared
// case-insensitively: when the name is taken, it returns the existing
// tenant with created false and changes nothing.
func (s *Service) TenantCreate(ctx context.Context, name string) (t *db.Tenant, created bool, err error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, false, invalidf("tenant name must be 1 to 200 characters")
	}
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if t, created, err = db.TenantCreate(ctx, tx, name); err != nil || !created {
			return err
		}
		return s.audit(ctx, tx, "tenant.create", t.ID, t.ID.String(), nil, t)
	})
	return t, created, err
}

// TenantList lists every tenant, oldest first.
func (s *Service) TenantList(ctx context.Context) ([]*db.Tenant, error) {
	return db.TenantList(ctx, s.pool)
}

// TenantPage lists a keyset page of tenants, oldest first.
func (s *Service) TenantPage(ctx context.Context, after string, limit int) (*Page[*db.Tenant], error) {
	cur, err := db.ParseCursor(after)
	if err != nil {
		return nil, invalidf("after: %v", err)
	}
	if limit, err = clampLimit(limit); err != nil {
		return nil, err
	}
	ts, err := db.TenantPage(ctx, s.pool, cur, limit)
	if err != nil {
		return nil, err
	}
	p := &Page[*db.Tenant]{Items: ts}
	if len(ts) == limit {
		last := ts[len(ts)-1]
		p.Next = db.Cursor{At: last.CreatedAt, ID: last.ID}.String()
	}
	return p, nil
}

// TenantShow returns one tenant.
func (s *Service) TenantShow(ctx context.Context, id uuid.UUID) (*db.Tenant, error) {
	return db.TenantGet(ctx, s.pool, id)
}

// TenantSetStatus enables or disables a tenant. Changed is false when it
// already had that status.
func (s *Service) TenantSetStatus(ctx context.Context, id uuid.UUID, status string) (t *db.Tenant, changed bool, err error) {
	if status != db.TenantActive && status != db.TenantDisabled {
		return nil, false, invalidf("tenant status: want active or disabled")
	}
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := db.TenantGet(ctx, tx, id)
		if err != nil {
			return err
		}
		if before.Status == status {
			t = before
			return nil
		}
		if t, err = db.TenantSetStatus(ctx, tx, id, status); err != nil {
			return err
		}
		changed = true
		action := "tenant.disable"
		if status == db.TenantActive {
			action = "tenant.enable"
		}
		return s.audit(ctx, tx, action, id, id.String(), before, t)
	})
	return t, changed, err
}
