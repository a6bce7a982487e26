package client

import (
	"context"
	"net/http"

	"github.com/google/uuid"
)

// TypingResult is the outcome of a typing signal: "sent",
// "unsupported" (the channel or place has no indicator: a no-op),
// "throttled" (one per conversation every few seconds) or "failed".
type TypingResult struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Typing shows the bot as typing in a conversation (and thread), best
// effort (POST /v1/conversations/typing): Telegram sendChatAction,
// Discord trigger typing, Slack assistant thread status.
func (c *Client) Typing(ctx context.Context, accountID uuid.UUID, conversationID, threadID string) (*TypingResult, error) {
	in := map[string]any{"account_id": accountID, "conversation_id": conversationID}
	if threadID != "" {
		in["thread_id"] = threadID
	}
	var out TypingResult
	if err := c.do(ctx, http.MethodPost, "/v1/conversations/typing", in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
