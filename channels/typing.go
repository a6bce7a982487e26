package channels

import (
	"context"
	"errors"
)

// ErrTypingUnsupported marks a signal the platform has no indicator for
// in this place (Slack outside an assistant thread). Wrapped in a
// *PermanentError; callers report it as a no-op, not a failure.
var ErrTypingUnsupported = errors.New("no typing signal here")

// TypingSignal asks a platform to show that the bot is working on an
// answer in a conversation (and thread, where the platform has threads).
type TypingSignal struct {
	ConversationID string
	ThreadID       string
}

// Typer is implemented by outbound adapters that can show a typing or
// "working" indicator: Telegram sendChatAction, Discord trigger typing,
// Slack assistant thread status. It is best effort: never queued, never
// retried, never dead-lettered. Errors are the usual typed set
// (*RateLimitedError, *TransientError, *PermanentError).
type Typer interface {
	Typing(ctx context.Context, sig *TypingSignal) error
}
