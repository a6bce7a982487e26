package slack

import (
	"context"
	"errors"
	"fmt"

	"github.com/miohq/mio/channels"
)

var _ channels.Typer = (*outbound)(nil)

// setStatusRequest is the assistant.threads.setStatus body.
type setStatusRequest struct {
	ChannelID string `json:"channel_id"`
	ThreadTS  string `json:"thread_ts"`
	Status    string `json:"status"`
}

// typingStatus is the status shown; Slack clears it after two minutes or
// at the bot's next message in the thread.
const typingStatus = "is thinking…"

// Typing sets the assistant thread status (assistant.threads.setStatus).
// Slack has no typing indicator for bots elsewhere: without a thread, or
// for an app without the assistant feature (an ok:false answer), it is a
// *PermanentError the caller reports as unsupported.
func (o *outbound) Typing(ctx context.Context, sig *channels.TypingSignal) error {
	const method = "assistant.threads.setStatus"
	if sig.ThreadID == "" {
		return channels.Permanent("slack: "+method, fmt.Errorf("%w: a status needs a thread (thread_ts)", channels.ErrTypingUnsupported))
	}
	_, err := o.call(ctx, method, setStatusRequest{ChannelID: sig.ConversationID, ThreadTS: sig.ThreadID, Status: typingStatus})
	var perm *channels.PermanentError
	if errors.As(err, &perm) {
		// Not an assistant thread, or an app without the feature.
		return &channels.PermanentError{Err: fmt.Errorf("%w: %w", channels.ErrTypingUnsupported, perm.Err)}
	}
	return err
}
