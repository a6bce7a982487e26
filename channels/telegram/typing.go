package telegram

import (
	"context"
	"fmt"
	"strconv"

	"github.com/miohq/mio/channels"
)

var _ channels.Typer = (*outbound)(nil)

// sendChatActionRequest is the sendChatAction body.
type sendChatActionRequest struct {
	ChatID          any    `json:"chat_id"`
	Action          string `json:"action"`
	MessageThreadID int64  `json:"message_thread_id,omitempty"`
}

// Typing shows "typing…" in the chat (sendChatAction, action typing; the
// client shows it for about 5 seconds or until the bot's next message).
func (o *outbound) Typing(ctx context.Context, sig *channels.TypingSignal) error {
	const method = "sendChatAction"
	chatID, err := parseChatID(sig.ConversationID)
	if err != nil {
		return channels.Permanent("telegram: "+method, err)
	}
	req := sendChatActionRequest{ChatID: chatID, Action: "typing"}
	if sig.ThreadID != "" {
		if req.MessageThreadID, err = strconv.ParseInt(sig.ThreadID, 10, 64); err != nil {
			return channels.Permanent("telegram: "+method, fmt.Errorf("thread id %q is not a message_thread_id", sig.ThreadID))
		}
	}
	status, header, ans, err := o.call(ctx, method, req)
	if err != nil {
		return err
	}
	return classify(method, status, header, ans)
}
