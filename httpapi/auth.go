package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// Principal is the authenticated caller of a /v1 request.
type Principal struct {
	TenantID uuid.UUID
	TokenID  uuid.UUID
	Roles    []db.Role
}

// Has reports whether the principal holds role.
func (p *Principal) Has(role db.Role) bool { return slices.Contains(p.Roles, role) }

// orRoles names roles for an error message: "read or consume".
func orRoles[R ~string](roles []R) string {
	var b strings.Builder
	for i, r := range roles {
		if i > 0 {
			b.WriteString(" or ")
		}
		b.WriteString(string(r))
	}
	return b.String()
}

type principalKey struct{}

// principalFrom returns the request's principal (set by authenticate).
func principalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// tokenCache remembers authenticated token hashes briefly so each request
// does not cost a database round trip; a revoked token stops working
// within the TTL.
type tokenCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]tokenEntry
}

type tokenEntry struct {
	p       *Principal
	expires time.Time
}

func newTokenCache(ttl time.Duration) *tokenCache {
	return &tokenCache{ttl: ttl, m: map[string]tokenEntry{}}
}

func (c *tokenCache) get(hash []byte) *Principal {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[string(hash)]
	if !ok || time.Now().After(e.expires) {
		return nil
	}
	return e.p
}

func (c *tokenCache) put(hash []byte, p *Principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 10_000 {
		clear(c.m)
	}
	c.m[string(hash)] = tokenEntry{p: p, expires: time.Now().Add(c.ttl)}
}

// authenticate requires a valid bearer token holding one of roles: 401
// when the token is missing, malformed, unknown or revoked; 403 when it
// lacks the role. Every query of the request then runs under the token's
// tenant.
func (s *Server) authenticate(roles ...db.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := bearerToken(r.Header.Get("Authorization"))
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mio"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "missing bearer token")
				return
			}
			tenantID, hash, err := db.ParseAPIToken(strings.TrimSpace(token))
			if err != nil {
				writeError(w, http.StatusUnauthorized, "unauthorized", "invalid token")
				return
			}
			p := s.tokens.get(hash)
			if p == nil {
				var tok *db.APIToken
				err := db.InTenantTx(r.Context(), s.pool, tenantID, func(tx pgx.Tx) error {
					var err error
					tok, err = db.APITokenAuthenticate(r.Context(), tx, tenantID, hash)
					if err == nil {
						err = tenantActive(r.Context(), tx, tenantID)
					}
					if err == nil {
						err = db.APITokenTouch(r.Context(), tx, tenantID, tok.ID)
					}
					return err
				})
				switch {
				case errors.Is(err, db.ErrBadToken):
					writeError(w, http.StatusUnauthorized, "unauthorized", "invalid or revoked token")
					return
				case errors.Is(err, errTenantDisabled):
					writeError(w, http.StatusForbidden, "tenant_disabled", "the token's tenant is disabled")
					return
				case err != nil:
					s.dbError(w, r, "authenticate", err)
					return
				}
				p = &Principal{TenantID: tok.TenantID, TokenID: tok.ID, Roles: tok.Roles}
				s.tokens.put(hash, p)
			}
			allowed := len(roles) == 0
			for _, role := range roles {
				allowed = allowed || p.Has(role)
			}
			if !allowed {
				writeError(w, http.StatusForbidden, "forbidden", "token lacks role "+orRoles(roles))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		})
	}
}

// errTenantDisabled: the token's tenant was disabled by an operator.
var errTenantDisabled = errors.New("tenant disabled")

// tenantActive returns errTenantDisabled when the tenant is disabled (a
// disabled tenant's tokens stop working within the token cache bound).
func tenantActive(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) error {
	t, err := db.TenantGet(ctx, tx, tenantID)
	if err != nil {
		return err
	}
	if t.Status == db.TenantDisabled {
		return errTenantDisabled
	}
	return nil
}

// bearerToken returns the credentials of an Authorization header of the
// Bearer scheme, matched case-insensitively (RFC 7235 §2.1: "bearer",
// "BEARER" and "Bearer" are the same scheme); ok is false for any other
// scheme or empty credentials.
func bearerToken(h string) (token string, ok bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}
