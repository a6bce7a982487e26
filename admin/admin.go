// Package admin holds MIO's operator operations — tenants, accounts, API
// and admin tokens, dead letters, consumers, the audit log — independent
// of transport. The `mio admin` CLI and the admin HTTP API call the same
// functions. A new account is validated and its secrets sealed by package
// accounts before it reaches the database; secrets are never returned.
//
// Every mutation writes a row to mio.audit_log in its own transaction:
// who (the Service's actor, see As), what, the target and its
// secrets-free state before and after. A mutation that changed nothing
// (revoking a revoked token) writes no row and reports Changed false.
//
// Internal to MIO; not a stable API.
package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// ErrInvalid wraps every validation failure of an operation's input.
var ErrInvalid = errors.New("invalid input")

// Service performs admin operations.
type Service struct {
	pool      *pgxpool.Pool
	box       *secretbox.Box // nil: operations needing secrets fail
	publicURL string
	registry  *channels.Registry
	actor     string
	now       func() time.Time
}

// New returns a Service acting as "system" (see As). box may be nil when
// no master key is configured; then creating accounts with secrets fails
// with a clear error.
func New(pool *pgxpool.Pool, box *secretbox.Box, publicURL string) *Service {
	return &Service{pool: pool, box: box, publicURL: strings.TrimRight(publicURL, "/"), actor: "system", now: time.Now}
}

// As returns a copy of s whose mutations are audited as actor:
// "admin:<admin token id>" for the admin API, "cli:<os user>" for the CLI.
func (s *Service) As(actor string) *Service {
	c := *s
	c.actor = actor
	return &c
}

// WithRegistry returns a copy of s that has the channels' adapters check
// account changes before they are written.
func (s *Service) WithRegistry(r *channels.Registry) *Service {
	c := *s
	c.registry = r
	return &c
}

// ChannelTypes describes the channels of s's registry, by slug (none
// without a registry).
func (s *Service) ChannelTypes() []channels.Description {
	if s.registry == nil {
		return []channels.Description{}
	}
	return s.registry.Describe()
}

// Actor is who s's mutations are audited as.
func (s *Service) Actor() string { return s.actor }

// audit writes the audit row of a mutation in its transaction.
func (s *Service) audit(ctx context.Context, tx db.DBTX, action string, tenantID uuid.UUID, target string, before, after any) error {
	_, err := db.AuditInsert(ctx, tx, &db.AuditInsertParams{Actor: s.actor, Action: action, TenantID: tenantID,
		Target: target, Before: before, After: after})
	return err
}

// Page is a keyset page: Next, when not empty, fetches the following one.
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// clampLimit bounds a page size: 0 is the default 100, at most 1000.
func clampLimit(n int) (int, error) {
	switch {
	case n == 0:
		return 100, nil
	case n < 0 || n > 1000:
		return 0, invalidf("limit: want 1 to 1000")
	}
	return n, nil
}

// invalidf is a validation failure wrapping ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
