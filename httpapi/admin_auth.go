package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
)

// AdminPrincipal is the authenticated caller of an admin request.
type AdminPrincipal struct {
	TokenID uuid.UUID
	Name    string
	Roles   []db.AdminRole
}

type adminPrincipalKey struct{}

func adminPrincipalFrom(ctx context.Context) *AdminPrincipal {
	p, _ := ctx.Value(adminPrincipalKey{}).(*AdminPrincipal)
	return p
}

// adminTokens caches authenticated admin tokens (by sha-256) briefly; a
// revoked token stops working within the TTL.
type adminTokens struct {
	mu sync.Mutex
	m  map[[32]byte]adminTokenEntry
}

type adminTokenEntry struct {
	p       *AdminPrincipal
	expires time.Time
}

// AdminTokenCacheTTL bounds how long an authenticated admin token is
// reused without reading mio.admin_tokens: a revoked or expired admin
// token stops working within it.
const AdminTokenCacheTTL = 5 * time.Second

// adminAuth requires an admin bearer token holding one of roles: 401 when
// it is missing, unknown, expired or revoked, 403 when it lacks the role.
// Every role may do what a viewer may; operator and credential-admin are
// separate (an operator cannot rotate secrets or manage admin tokens).
func (s *Server) adminAuth(roles ...db.AdminRole) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := bearerToken(r.Header.Get("Authorization")) // the public API's parser: any case of the scheme
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mio-admin"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "missing admin bearer token")
				return
			}
			p, err := s.adminPrincipal(r.Context(), token)
			switch {
			case errors.Is(err, db.ErrBadToken):
				writeError(w, http.StatusUnauthorized, "unauthorized", "invalid or revoked admin token")
				return
			case err != nil:
				s.dbError(w, r, "admin authenticate", err)
				return
			}
			allowed := false
			for _, role := range roles {
				allowed = allowed || slices.Contains(p.Roles, role) || (role == db.AdminRoleViewer && len(p.Roles) > 0)
			}
			if !allowed {
				writeError(w, http.StatusForbidden, "forbidden", "admin token lacks role "+orRoles(roles))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), adminPrincipalKey{}, p)))
		})
	}
}

func (s *Server) adminPrincipal(ctx context.Context, token string) (*AdminPrincipal, error) {
	sum := sha256.Sum256([]byte(token))
	now := time.Now()
	s.adminTokens.mu.Lock()
	e, ok := s.adminTokens.m[sum]
	s.adminTokens.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.p, nil
	}
	tok, err := db.AdminTokenAuthenticate(ctx, s.pool, token, now)
	if err != nil {
		return nil, err
	}
	if err := db.AdminTokenTouch(ctx, s.pool, tok.ID); err != nil {
		return nil, err
	}
	p := &AdminPrincipal{TokenID: tok.ID, Name: tok.Name, Roles: tok.Roles}
	ttl := AdminTokenCacheTTL
	if tok.ExpiresAt != nil && tok.ExpiresAt.Sub(now) < ttl {
		ttl = tok.ExpiresAt.Sub(now)
	}
	s.adminTokens.mu.Lock()
	if s.adminTokens.m == nil || len(s.adminTokens.m) > 1000 {
		s.adminTokens.m = map[[32]byte]adminTokenEntry{}
	}
	s.adminTokens.m[sum] = adminTokenEntry{p: p, expires: now.Add(ttl)}
	s.adminTokens.mu.Unlock()
	return p, nil
}

// adminService is the admin service acting as the request's admin token
// (its mutations are audited as "admin:<token id>").
func (s *Server) adminService(r *http.Request) *admin.Service {
	actor := "admin:unknown"
	if p := adminPrincipalFrom(r.Context()); p != nil {
		actor = "admin:" + p.TokenID.String()
	}
	return s.admin.As(actor)
}
