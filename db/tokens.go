package db

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// Role is an API token role, as stored in mio.api_tokens.roles.
type Role string

// API token roles.
const (
	RoleConsume Role = "consume"
	RoleProduce Role = "produce"
	RoleRead    Role = "read"
)

// Valid reports whether r is an API token role.
func (r Role) Valid() bool { return r == RoleConsume || r == RoleProduce || r == RoleRead }

// AdminRole is an admin token role, as stored in mio.admin_tokens.roles.
type AdminRole string

// Admin token roles: a viewer reads, an operator also changes things, a
// credential admin manages account credentials.
const (
	AdminRoleViewer          AdminRole = "viewer"
	AdminRoleOperator        AdminRole = "operator"
	AdminRoleCredentialAdmin AdminRole = "credential-admin"
)

// roleStrings and rolesFrom convert roles to and from the text[] column.
func roleStrings[R ~string](roles []R) []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = string(r)
	}
	return out
}

func rolesFrom[R ~string](roles []string) []R {
	out := make([]R, len(roles))
	for i, r := range roles {
		out[i] = R(r)
	}
	return out
}

// ErrBadToken: a token that is malformed, unknown or revoked.
var ErrBadToken = errors.New("invalid or revoked token")

// APIToken is a tenant's API token (metadata only: the token itself is
// shown once at creation and stored as a sha-256 hash).
type APIToken struct {
	TenantID   uuid.UUID  `json:"tenant_id"`
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	Roles      []Role     `json:"roles"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// HasRole reports whether the token carries role.
func (t *APIToken) HasRole(role Role) bool {
	for _, r := range t.Roles {
		if r == role {
			return true
		}
	}
	return false
}

func apiTokenFrom(r dbsqlc.MioApiToken) *APIToken {
	return &APIToken{TenantID: r.TenantID, ID: r.ID, Name: r.Name, Roles: rolesFrom[Role](r.Roles),
		CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt}
}

// API tokens read "mio_<tenant id, 32 hex>_<secret, 43 base64url>". The
// tenant id in clear lets authentication set the tenant first and look the
// hash up under row-level security.
const apiTokenPrefix = "mio_"

// NewAPITokenSecret returns a fresh token for tenantID and its hash.
func NewAPITokenSecret(tenantID uuid.UUID) (token string, hash []byte) {
	var secret [32]byte
	_, _ = rand.Read(secret[:])
	token = apiTokenPrefix + hex.EncodeToString(tenantID[:]) + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(token))
	return token, sum[:]
}

// ParseAPIToken extracts the tenant of a token and its hash, without any
// database access.
func ParseAPIToken(token string) (tenantID uuid.UUID, hash []byte, err error) {
	rest, ok := strings.CutPrefix(token, apiTokenPrefix)
	if !ok || len(rest) != 32+1+43 || rest[32] != '_' {
		return uuid.Nil, nil, ErrBadToken
	}
	raw, err := hex.DecodeString(rest[:32])
	if err != nil {
		return uuid.Nil, nil, ErrBadToken
	}
	copy(tenantID[:], raw)
	sum := sha256.Sum256([]byte(token))
	return tenantID, sum[:], nil
}

// APITokenInsert stores a token's hash and metadata.
func APITokenInsert(ctx context.Context, tx DBTX, tenantID uuid.UUID, name string, roles []Role, hash []byte) (*APIToken, error) {
	r, err := queries().APITokenInsert(ctx, tx, &dbsqlc.APITokenInsertParams{
		TenantID: tenantID, ID: uuid.New(), Name: name, Roles: roleStrings(roles), TokenSha256: hash})
	if err != nil {
		return nil, translate(err)
	}
	return apiTokenFrom(r), nil
}

// APITokenAuthenticate returns the live token with this hash in the
// transaction's tenant, or ErrBadToken.
func APITokenAuthenticate(ctx context.Context, tx DBTX, tenantID uuid.UUID, hash []byte) (*APIToken, error) {
	r, err := queries().APITokenGetByHash(ctx, tx, &dbsqlc.APITokenGetByHashParams{TenantID: tenantID, TokenSha256: hash})
	if err != nil {
		if errors.Is(translate(err), ErrNotFound) {
			return nil, ErrBadToken
		}
		return nil, translate(err)
	}
	if r.RevokedAt != nil {
		return nil, ErrBadToken
	}
	return apiTokenFrom(r), nil
}

// APITokenTouch records use of a token (at most once a minute).
func APITokenTouch(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) error {
	return translate(queries().APITokenTouch(ctx, tx, &dbsqlc.APITokenTouchParams{TenantID: tenantID, ID: id}))
}

// APITokenList returns the tenant's tokens.
func APITokenList(ctx context.Context, tx DBTX, tenantID uuid.UUID) ([]*APIToken, error) {
	rows, err := queries().APITokenList(ctx, tx, &dbsqlc.APITokenListParams{TenantID: tenantID})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*APIToken, len(rows))
	for i, r := range rows {
		out[i] = apiTokenFrom(r)
	}
	return out, nil
}

// APITokenPage returns a keyset page of the tenant's API tokens, oldest
// first, after cursor after.
func APITokenPage(ctx context.Context, tx DBTX, tenantID uuid.UUID, after Cursor, limit int) ([]*APIToken, error) {
	rows, err := queries().APITokenPage(ctx, tx, &dbsqlc.APITokenPageParams{TenantID: tenantID, AfterCreatedAt: after.At,
		AfterID: after.ID, MaxRows: int32(limit)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*APIToken, len(rows))
	for i, r := range rows {
		out[i] = apiTokenFrom(r)
	}
	return out, nil
}

// APITokenGet returns one of the tenant's tokens, locked for update in tx.
func APITokenGet(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) (*APIToken, error) {
	r, err := queries().APITokenGet(ctx, tx, &dbsqlc.APITokenGetParams{TenantID: tenantID, ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return apiTokenFrom(r), nil
}

// APITokenRevoke revokes a token (idempotent).
func APITokenRevoke(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) (*APIToken, error) {
	r, err := queries().APITokenRevoke(ctx, tx, &dbsqlc.APITokenRevokeParams{TenantID: tenantID, ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return apiTokenFrom(r), nil
}

// NewAdminTokenSecret returns a fresh admin token and its hash.
func NewAdminTokenSecret() (token string, hash []byte) {
	var secret [32]byte
	_, _ = rand.Read(secret[:])
	token = "mioadm_" + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(token))
	return token, sum[:]
}

// AdminToken is an operator token for the admin listener (metadata only:
// the token itself is shown once at creation and stored as a sha-256 hash).
type AdminToken struct {
	ID         uuid.UUID   `json:"id"`
	Name       string      `json:"name"`
	Roles      []AdminRole `json:"roles"`
	CreatedAt  time.Time   `json:"created_at"`
	LastUsedAt *time.Time  `json:"last_used_at,omitempty"`
	// ExpiresAt, when set, is when the token stops authenticating.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Valid reports whether r is an admin token role.
func (r AdminRole) Valid() bool {
	return r == AdminRoleViewer || r == AdminRoleOperator || r == AdminRoleCredentialAdmin
}

func adminTokenFrom(r dbsqlc.MioAdminToken) *AdminToken {
	return &AdminToken{ID: r.ID, Name: r.Name, Roles: rolesFrom[AdminRole](r.Roles), CreatedAt: r.CreatedAt,
		LastUsedAt: r.LastUsedAt, ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt}
}

// AdminTokenInsert stores an admin token's hash; expiresAt nil: it never
// expires.
func AdminTokenInsert(ctx context.Context, tx DBTX, name string, roles []AdminRole, hash []byte, expiresAt *time.Time) (*AdminToken, error) {
	r, err := queries().AdminTokenInsert(ctx, tx, &dbsqlc.AdminTokenInsertParams{ID: uuid.New(), Name: name,
		Roles: roleStrings(roles), TokenSha256: hash, ExpiresAt: expiresAt})
	if err != nil {
		return nil, translate(err)
	}
	return adminTokenFrom(r), nil
}

// AdminTokenAuthenticate returns the live admin token for a plaintext
// token, or ErrBadToken when it is unknown, revoked or expired at now.
func AdminTokenAuthenticate(ctx context.Context, tx DBTX, token string, now time.Time) (*AdminToken, error) {
	sum := sha256.Sum256([]byte(token))
	r, err := queries().AdminTokenGetByHash(ctx, tx, &dbsqlc.AdminTokenGetByHashParams{TokenSha256: sum[:]})
	if err != nil {
		if errors.Is(translate(err), ErrNotFound) {
			return nil, ErrBadToken
		}
		return nil, translate(err)
	}
	if r.RevokedAt != nil || (r.ExpiresAt != nil && !now.Before(*r.ExpiresAt)) {
		return nil, ErrBadToken
	}
	return adminTokenFrom(r), nil
}

// AdminTokenTouch records use of a token (at most once a minute).
func AdminTokenTouch(ctx context.Context, tx DBTX, id uuid.UUID) error {
	return translate(queries().AdminTokenTouch(ctx, tx, &dbsqlc.AdminTokenTouchParams{ID: id}))
}

// AdminTokenList returns a keyset page of admin tokens, oldest first,
// after the cursor (zero: from the start).
func AdminTokenList(ctx context.Context, tx DBTX, after Cursor, limit int) ([]*AdminToken, error) {
	rows, err := queries().AdminTokenList(ctx, tx, &dbsqlc.AdminTokenListParams{
		AfterCreatedAt: after.At, AfterID: after.ID, MaxRows: int32(limit)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*AdminToken, len(rows))
	for i, r := range rows {
		out[i] = adminTokenFrom(r)
	}
	return out, nil
}

// AdminTokenGet returns one admin token, locked for update in tx.
func AdminTokenGet(ctx context.Context, tx DBTX, id uuid.UUID) (*AdminToken, error) {
	r, err := queries().AdminTokenGet(ctx, tx, &dbsqlc.AdminTokenGetParams{ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return adminTokenFrom(r), nil
}

// AdminTokenRevoke revokes a token (idempotent: revoked_at keeps its
// first value).
func AdminTokenRevoke(ctx context.Context, tx DBTX, id uuid.UUID) (*AdminToken, error) {
	r, err := queries().AdminTokenRevoke(ctx, tx, &dbsqlc.AdminTokenRevokeParams{ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return adminTokenFrom(r), nil
}
