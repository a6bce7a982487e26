package channels

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// ErrEndpointGone marks a permanent failure after which the account's
// endpoint must be disabled (Standard Webhooks 410 Gone). It is wrapped in
// a *PermanentError.
var ErrEndpointGone = errors.New("endpoint gone")

// OutboundMessage is one send (or edit) attempt handed to an adapter.
type OutboundMessage struct {
	// MessageID is MIO's outbound message id; Attempt counts from 1.
	MessageID uuid.UUID
	Attempt   int
	// IdempotencyKey is deterministic per (message, attempt series,
	// attempt): adapters pass it where the platform honours one, so a
	// retried attempt after a crash is not sent twice.
	IdempotencyKey string
	// SeriesKey is the same for every attempt of one attempt series:
	// automatic retries and crash recovery keep it, only an explicit
	// resend (a new series) changes it. The generic webhook channel sends
	// it as the Standard Webhooks webhook-id, which receivers deduplicate
	// on. Empty means "derive it from MessageID".
	SeriesKey      string
	ConversationID string
	ThreadID       string
	// ReplyToProviderID quotes a platform message, where supported.
	ReplyToProviderID string
	Text              string
	RichContent       *envelope.RichContent
	Attachments       []envelope.SendAttachment
	// EditProviderMessageID, when set, asks the adapter to edit that
	// provider message instead of sending a new one.
	EditProviderMessageID string
	// Reaction, when set, makes this a reaction (POST /v1/reactions)
	// handed to the adapter's Reactor; Text, RichContent and Attachments
	// are then empty.
	Reaction *OutboundReaction
}

// OutboundReaction is an emoji to add to (or, with Remove, take off) the
// platform message MessageID in the OutboundMessage's conversation.
type OutboundReaction struct {
	MessageID string
	Emoji     string
	Remove    bool
}

// SendResult is what the platform answered.
type SendResult struct {
	// ProviderMessageID is the platform's id of the message sent or
	// edited; it makes later edits and receipts possible.
	ProviderMessageID string
	// ConversationID is set when the platform moved the conversation
	// (Telegram migrate_to_chat_id); the message was sent there.
	ConversationID string
	// IdempotencyKey is the key the adapter put on the wire for this
	// call (the webhook channel's webhook-id, Discord's nonce); empty when
	// the platform took none. The outbox's audit trail records it.
	IdempotencyKey string
}

// Outbound sends messages for one account. Errors are one of
// *RateLimitedError, *TransientError or *PermanentError.
type Outbound interface {
	Send(ctx context.Context, msg *OutboundMessage) (*SendResult, error)
}

// Editor is implemented by outbound adapters that can edit a sent
// message. Adapters without it get edits sent as new messages.
type Editor interface {
	Edit(ctx context.Context, msg *OutboundMessage) (*SendResult, error)
}

// Reactor is implemented by outbound adapters that can react to a
// platform message (Slack reactions.add/remove, Telegram
// setMessageReaction, Discord's reactions endpoints, a WhatsApp reaction
// message). msg.Reaction is set; the result's ProviderMessageID is the
// message reacted to, or the platform's id of the reaction where it has
// one (WhatsApp). Errors are classified as Send's. The reactions
// capability is derived from it: POST /v1/reactions refuses accounts of
// channels without it.
type Reactor interface {
	React(ctx context.Context, msg *OutboundMessage) (*SendResult, error)
}

// OutboundChannel is a Channel that can send.
type OutboundChannel interface {
	// NewOutbound validates the account's configuration for sending and
	// returns its sender. An invalid configuration returns an error
	// wrapping ErrInvalidConfig.
	NewOutbound(acct Account) (Outbound, error)
}
