package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// Outbound is an outbound message as the server reports it (GET
// /v1/outbound/{id}; Events only there).
type Outbound struct {
	ID             uuid.UUID `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	AccountID      uuid.UUID `json:"account_id"`
	ChannelType    string    `json:"channel_type"`
	ConversationID string    `json:"conversation_id"`
	ThreadID       string    `json:"thread_id,omitempty"`
	// Kind is "message", or "reaction" (POST /v1/reactions) with Reaction
	// set.
	Kind              string                    `json:"kind"`
	Reaction          *envelope.ReactionSend    `json:"reaction,omitempty"`
	Text              string                    `json:"text"`
	RichContent       json.RawMessage           `json:"rich_content,omitempty"`
	Attachments       []envelope.SendAttachment `json:"attachments,omitempty"`
	EditOf            *uuid.UUID                `json:"edit_of,omitempty"`
	HandoffState      string                    `json:"handoff_state"`
	ProviderState     string                    `json:"provider_state"`
	Attempt           int                       `json:"attempt"`
	Attempts          int                       `json:"attempts"`
	Series            int                       `json:"series"`
	LastError         string                    `json:"last_error,omitempty"`
	ProviderMessageID string                    `json:"provider_message_id,omitempty"`
	NextAttemptAt     *time.Time                `json:"next_attempt_at,omitempty"`
	CreatedAt         time.Time                 `json:"created_at"`
	UpdatedAt         time.Time                 `json:"updated_at"`
	HandedOffAt       *time.Time                `json:"handed_off_at,omitempty"`
	DeadAt            *time.Time                `json:"dead_at,omitempty"`
	DiscardedAt       *time.Time                `json:"discarded_at,omitempty"`
	Events            []OutboundEvent           `json:"events,omitempty"`
}

// OutboundEvent is one entry of an outbound message's timeline.
type OutboundEvent struct {
	Event   string          `json:"event"`
	Machine string          `json:"machine"`
	State   string          `json:"state"`
	Attempt int             `json:"attempt"`
	At      time.Time       `json:"at"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// GetOutbound returns an outbound message with its timeline: where a
// send or reply is (handoff_state, provider_state, last_error).
func (c *Client) GetOutbound(ctx context.Context, id uuid.UUID) (*Outbound, error) {
	var out Outbound
	if err := c.do(ctx, http.MethodGet, "/v1/outbound/"+id.String(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ConversationItem is one message of a conversation: Direction "inbound"
// with Message (without raw), or "outbound" with Outbound (without
// events).
type ConversationItem struct {
	Direction string            `json:"direction"`
	ID        uuid.UUID         `json:"id"`
	At        time.Time         `json:"at"`
	Message   *envelope.Message `json:"message,omitempty"`
	Outbound  *Outbound         `json:"outbound,omitempty"`
}

// ConversationPage is a page of a conversation's history, oldest first;
// NextCursor, when set, is the Before of the next older page.
type ConversationPage struct {
	Items      []ConversationItem `json:"items"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// ConversationMessages returns a conversation's inbound and outbound
// messages (GET /v1/conversations/{account_id}/{conversation_id}/messages):
// the newest limit (1–100; 0: the server's default, 20) before cursor
// before ("" for the newest), oldest first.
func (c *Client) ConversationMessages(ctx context.Context, accountID uuid.UUID, conversationID string, limit int, before string) (*ConversationPage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if before != "" {
		q.Set("before", before)
	}
	path := "/v1/conversations/" + accountID.String() + "/" + url.PathEscape(conversationID) + "/messages"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out ConversationPage
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
