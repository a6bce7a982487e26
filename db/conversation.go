package db

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// ConversationItem is one message of a conversation's history: an inbound
// message (Inbound set: its envelope, without raw payload) or an outbound
// one (Outbound set).
type ConversationItem struct {
	At       time.Time // inbound: received_at; outbound: created_at
	ID       uuid.UUID
	Inbound  json.RawMessage
	Outbound *Outbound
}

// Cursor is the item's position: the next older page starts past it.
func (i ConversationItem) Cursor() Cursor { return Cursor{At: i.At, ID: i.ID} }

// ConversationPageParams select a page of ConversationPage.
type ConversationPageParams struct {
	AccountID      uuid.UUID
	ConversationID string
	// Before: only items older than this position; zero: the newest.
	Before Cursor
	Limit  int
}

// conversationEnd is the position after every item (the first page).
var conversationEnd = Cursor{At: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), ID: uuid.Max}

// ConversationPage returns up to p.Limit of the newest messages of one
// conversation, inbound and outbound, before p.Before, oldest first, and
// whether older ones remain. Each table is read by its conversation index
// (one descent each, p.Limit+1 rows at most).
func ConversationPage(ctx context.Context, tx DBTX, tenantID uuid.UUID, p ConversationPageParams) ([]ConversationItem, bool, error) {
	before := p.Before
	if before.ID == uuid.Nil {
		before = conversationEnd
	}
	n := int32(p.Limit + 1)
	in, err := queries().InboxConversationPage(ctx, tx, &dbsqlc.InboxConversationPageParams{TenantID: tenantID,
		AccountID: p.AccountID, ConversationID: p.ConversationID, BeforeAt: before.At, BeforeID: before.ID, RowLimit: n})
	if err != nil {
		return nil, false, translate(err)
	}
	out, err := outboundsFrom(queries().OutboxConversationPage(ctx, tx, &dbsqlc.OutboxConversationPageParams{TenantID: tenantID,
		AccountID: p.AccountID, ConversationID: p.ConversationID, BeforeAt: before.At, BeforeID: before.ID, RowLimit: n}))
	if err != nil {
		return nil, false, err
	}
	items := make([]ConversationItem, 0, len(in)+len(out))
	for _, r := range in {
		items = append(items, ConversationItem{At: r.ReceivedAt, ID: r.ID, Inbound: r.Envelope})
	}
	for _, o := range out {
		items = append(items, ConversationItem{At: o.CreatedAt, ID: o.ID, Outbound: o})
	}
	// Newest first, keep the page, then oldest first for the caller.
	slices.SortFunc(items, func(a, b ConversationItem) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return cmp.Compare(b.ID.String(), a.ID.String())
	})
	more := len(items) > p.Limit
	items = items[:min(len(items), p.Limit)]
	slices.Reverse(items)
	return items, more, nil
}
