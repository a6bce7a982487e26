package admin

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// TokenCreate creates an API token for a tenant and returns it in plain
// text, the only time it is ever visible.
func (s *Service) TokenCreate(ctx context.Context, tenantID uuid.UUID, name string, roles []db.Role) (string, *db.APIToken, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return "", nil, invalidf("token name must be 1 to 200 characters")
	}
	if len(roles) == 0 {
		return "", nil, invalidf("at least one role (consume, produce, read) is required")
	}
	for _, r := range roles {
		if !r.Valid() {
			return "", nil, invalidf("role %q: want consume, produce or read", r)
		}
	}
	roles = slices.Clone(roles)
	slices.Sort(roles)
	roles = slices.Compact(roles)
	token, hash := db.NewAPITokenSecret(tenantID)
	var tok *db.APIToken
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		if _, err := db.TenantGet(ctx, tx, tenantID); err != nil {
			return err
		}
		var err error
		if tok, err = db.APITokenInsert(ctx, tx, tenantID, name, roles, hash); err != nil {
			return err
		}
		return s.audit(ctx, tx, "api_token.create", tenantID, tok.ID.String(), nil, tok)
	})
	if err != nil {
		return "", nil, err
	}
	return token, tok, nil
}

// TokenList lists a tenant's API tokens (metadata, never the tokens).
// TokenPage lists a keyset page of the tenant's API tokens (never their
// secrets), oldest first; after is the previous page's Next.
func (s *Service) TokenPage(ctx context.Context, tenantID uuid.UUID, after string, limit int) (*Page[*db.APIToken], error) {
	cur, err := db.ParseCursor(after)
	if err != nil {
		return nil, invalidf("after: %v", err)
	}
	if limit, err = clampLimit(limit); err != nil {
		return nil, err
	}
	p := &Page[*db.APIToken]{Items: []*db.APIToken{}}
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		toks, err := db.APITokenPage(ctx, tx, tenantID, cur, limit)
		p.Items = append(p.Items, toks...)
		if len(toks) == limit {
			last := toks[len(toks)-1]
			p.Next = db.Cursor{At: last.CreatedAt, ID: last.ID}.String()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (s *Service) TokenList(ctx context.Context, tenantID uuid.UUID) ([]*db.APIToken, error) {
	var out []*db.APIToken
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		out, err = db.APITokenList(ctx, tx, tenantID)
		return err
	})
	if out == nil {
		out = []*db.APIToken{}
	}
	return out, err
}

// TokenRevoke revokes an API token. It stops authenticating within the
// API's token cache bound (5 s). Changed is false when it was already
// revoked.
func (s *Service) TokenRevoke(ctx context.Context, tenantID, id uuid.UUID) (tok *db.APIToken, changed bool, err error) {
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		before, err := db.APITokenGet(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if before.RevokedAt != nil {
			tok = before
			return nil
		}
		if tok, err = db.APITokenRevoke(ctx, tx, tenantID, id); err != nil {
			return err
		}
		changed = true
		return s.audit(ctx, tx, "api_token.revoke", tenantID, id.String(), before, tok)
	})
	return tok, changed, err
}

// AdminTokenCreateParams describe a new admin token.
type AdminTokenCreateParams struct {
	Name  string
	Roles []db.AdminRole
	// TTL, when positive, makes the token expire that long from now.
	TTL time.Duration
}

// AdminTokenCreate creates an admin token and returns it in plain text,
// the only time it is ever visible.
func (s *Service) AdminTokenCreate(ctx context.Context, p AdminTokenCreateParams) (string, *db.AdminToken, error) {
	p.Name = strings.TrimSpace(p.Name)
	if p.Name == "" || len(p.Name) > 200 {
		return "", nil, invalidf("admin token name must be 1 to 200 characters")
	}
	if len(p.Roles) == 0 {
		return "", nil, invalidf("at least one role (viewer, operator, credential-admin) is required")
	}
	for _, r := range p.Roles {
		if !r.Valid() {
			return "", nil, invalidf("role %q: want viewer, operator or credential-admin", r)
		}
	}
	if p.TTL < 0 {
		return "", nil, invalidf("ttl must be positive")
	}
	roles := slices.Clone(p.Roles)
	slices.Sort(roles)
	roles = slices.Compact(roles)
	var expires *time.Time
	if p.TTL > 0 {
		t := s.now().Add(p.TTL)
		expires = &t
	}
	token, hash := db.NewAdminTokenSecret()
	var tok *db.AdminToken
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if tok, err = db.AdminTokenInsert(ctx, tx, p.Name, roles, hash, expires); err != nil {
			return err
		}
		return s.audit(ctx, tx, "admin_token.create", uuid.Nil, tok.ID.String(), nil, tok)
	})
	if err != nil {
		return "", nil, err
	}
	return token, tok, nil
}

// AdminTokenList lists a keyset page of admin tokens (metadata only).
func (s *Service) AdminTokenList(ctx context.Context, after string, limit int) (*Page[*db.AdminToken], error) {
	cur, err := db.ParseCursor(after)
	if err != nil {
		return nil, invalidf("after: %v", err)
	}
	if limit, err = clampLimit(limit); err != nil {
		return nil, err
	}
	ts, err := db.AdminTokenList(ctx, s.pool, cur, limit)
	if err != nil {
		return nil, err
	}
	p := &Page[*db.AdminToken]{Items: ts}
	if len(ts) == limit {
		last := ts[len(ts)-1]
		p.Next = db.Cursor{At: last.CreatedAt, ID: last.ID}.String()
	}
	return p, nil
}

// AdminTokenRevoke revokes an admin token. It stops authenticating
// within the admin listener's token cache bound (AdminTokenCacheTTL in
// package httpapi, 5 s). Changed is false when it was already revoked.
func (s *Service) AdminTokenRevoke(ctx context.Context, id uuid.UUID) (tok *db.AdminToken, changed bool, err error) {
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := db.AdminTokenGet(ctx, tx, id)
		if err != nil {
			return err
		}
		if before.RevokedAt != nil {
			tok = before
			return nil
		}
		if tok, err = db.AdminTokenRevoke(ctx, tx, id); err != nil {
			return err
		}
		changed = true
		return s.audit(ctx, tx, "admin_token.revoke", uuid.Nil, id.String(), before, tok)
	})
	return tok, changed, err
}

// AuditList lists a keyset page of the audit log, newest first.
func (s *Service) AuditList(ctx context.Context, p db.AuditListParams) (*Page[*db.AuditEntry], error) {
	var err error
	if p.Limit, err = clampLimit(p.Limit); err != nil {
		return nil, err
	}
	es, err := db.AuditList(ctx, s.pool, p)
	if err != nil {
		return nil, err
	}
	pg := &Page[*db.AuditEntry]{Items: es}
	if len(es) == p.Limit {
		pg.Next = strconv.FormatInt(es[len(es)-1].ID, 10)
	}
	return pg, nil
}
