package outbox

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// Page sizes of List.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// Get returns one outbound message of the tenant with its event
// timeline, oldest first. ErrNotFound: no such message in the tenant.
func (s *Service) Get(ctx context.Context, tenantID, id uuid.UUID) (*db.Outbound, []db.OutboxEvent, error) {
	var o *db.Outbound
	var events []db.OutboxEvent
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		if o, err = db.OutboxGet(ctx, tx, tenantID, id); err != nil {
			return err
		}
		events, err = db.OutboxEventList(ctx, tx, tenantID, id)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	return o, events, nil
}

// Page is a page of List.
type Page struct {
	// Items are the messages, newest first.
	Items []*db.Outbound
	// Next is the BeforeID of the next page; uuid.Nil on the last page.
	Next uuid.UUID
}

// List returns a page of the tenant's outbound messages, newest first,
// filtered by p. p.Limit 0 means DefaultListLimit; it is capped at
// MaxListLimit.
func (s *Service) List(ctx context.Context, tenantID uuid.UUID, p db.OutboxListParams) (*Page, error) {
	if p.Limit <= 0 {
		p.Limit = DefaultListLimit
	}
	p.Limit = min(p.Limit, MaxListLimit)
	var rows []*db.Outbound
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		rows, err = db.OutboxList(ctx, tx, tenantID, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	page := &Page{Items: rows}
	if len(rows) == p.Limit {
		page.Next = rows[len(rows)-1].ID
	}
	return page, nil
}
