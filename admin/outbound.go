package admin

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// OutboundSearch is a search of a tenant's outbound messages.
type OutboundSearch struct {
	// Filter filters and pages like GET /v1/outbound (BeforeID: the
	// previous page's Next). Limit 0: 100; at most 1000.
	Filter db.OutboxListParams
	// Since and Until, when set, keep messages created in [Since, Until).
	Since, Until time.Time
}

// OutboundPage is a page of a search, newest first; Next (uuid.Nil on
// the last page) is the following page's Filter.BeforeID.
type OutboundPage struct {
	Items []*db.Outbound
	Next  uuid.UUID
}

// OutboundSearch lists a tenant's outbound messages, newest first,
// keyset-paged on the time-ordered id (no count).
func (s *Service) OutboundSearch(ctx context.Context, tenantID uuid.UUID, q OutboundSearch) (*OutboundPage, error) {
	p := q.Filter
	var err error
	if p.Limit, err = clampLimit(p.Limit); err != nil {
		return nil, err
	}
	if !q.Until.IsZero() {
		if floor := db.IDFloor(q.Until); p.BeforeID == uuid.Nil || floor.String() < p.BeforeID.String() {
			p.BeforeID = floor
		}
	}
	var rows []*db.Outbound
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		rows, err = db.OutboxList(ctx, tx, tenantID, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	page := &OutboundPage{Items: rows}
	if len(rows) == p.Limit {
		page.Next = rows[len(rows)-1].ID
	}
	for i, o := range rows {
		if !q.Since.IsZero() && o.CreatedAt.Before(q.Since) {
			page.Items, page.Next = rows[:i], uuid.Nil // older than Since: the search is over
			break
		}
	}
	return page, nil
}
