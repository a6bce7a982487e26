package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// Page sizes of a conversation's history.
const (
	defaultHistoryLimit = 20
	maxHistoryLimit     = 100
)

// historyItem is one message of a conversation's history: an inbound
// message (mio.v1, without raw) or an outbound one (without its timeline).
type historyItem struct {
	Direction string            `json:"direction"` // inbound | outbound
	ID        uuid.UUID         `json:"id"`
	At        time.Time         `json:"at"`
	Message   *envelope.Message `json:"message,omitempty"`
	Outbound  *outbox.View      `json:"outbound,omitempty"`
}

type historyPage struct {
	Items      []historyItem `json:"items"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// historyQuery is a request for a page of a conversation's history.
type historyQuery struct {
	AccountID      uuid.UUID
	ConversationID string
	Limit          int
	Before         string
}

// getConversationMessages answers GET
// /v1/conversations/{account_id}/{conversation_id}/messages?limit=&before=:
// the conversation's inbound and outbound messages, oldest first, the
// newest page first; next_cursor, when present, is the before of the
// next older page.
func (s *Server) getConversationMessages(w http.ResponseWriter, r *http.Request) {
	q := historyQuery{Limit: defaultHistoryLimit}
	var err error
	if q.AccountID, err = uuid.Parse(chi.URLParam(r, "account_id")); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "account_id must be a UUID")
		return
	}
	if q.ConversationID, err = url.PathUnescape(chi.URLParam(r, "conversation_id")); err != nil || q.ConversationID == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "conversation_id: want the platform's conversation id, path-escaped")
		return
	}
	for k := range r.URL.Query() {
		if k != "limit" && k != "before" {
			writeError(w, http.StatusBadRequest, "bad_request", "unknown query parameter "+strconv.Quote(k))
			return
		}
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		if q.Limit, err = strconv.Atoi(v); err != nil || q.Limit < 1 || q.Limit > maxHistoryLimit {
			writeError(w, http.StatusBadRequest, "bad_request", "limit: want 1 to "+strconv.Itoa(maxHistoryLimit))
			return
		}
	}
	q.Before = r.URL.Query().Get("before")
	page, err := s.conversationHistory(r.Context(), principalFrom(r.Context()).TenantID, q)
	switch {
	case errors.Is(err, db.ErrBadCursor):
		writeError(w, http.StatusBadRequest, "bad_request", "before: not a next_cursor of a previous page")
	case err != nil:
		s.dbError(w, r, "conversation history", err)
	default:
		writeJSON(w, http.StatusOK, page)
	}
}

// conversationHistory reads one page under the tenant (row-level
// security: another tenant's account has no messages here).
func (s *Server) conversationHistory(ctx context.Context, tenantID uuid.UUID, q historyQuery) (*historyPage, error) {
	before, err := db.ParseCursor(q.Before)
	if err != nil {
		return nil, err
	}
	var (
		items []db.ConversationItem
		more  bool
	)
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		items, more, err = db.ConversationPage(ctx, tx, tenantID, db.ConversationPageParams{
			AccountID: q.AccountID, ConversationID: q.ConversationID, Before: before, Limit: q.Limit})
		return err
	})
	if err != nil {
		return nil, err
	}
	page := &historyPage{Items: make([]historyItem, len(items))}
	for i, it := range items {
		h := historyItem{ID: it.ID, At: it.At}
		if it.Outbound != nil {
			h.Direction, h.Outbound = "outbound", outbox.ViewOf(it.Outbound, nil)
		} else {
			h.Direction, h.Message = "inbound", &envelope.Message{}
			if err := json.Unmarshal(it.Inbound, h.Message); err != nil {
				return nil, err
			}
		}
		page.Items[i] = h
	}
	if more && len(items) > 0 {
		page.NextCursor = items[0].Cursor().String()
	}
	return page, nil
}
