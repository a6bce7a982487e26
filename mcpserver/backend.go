package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// Backend is what the tools and resources call: MIO's agent API as one
// caller (one tenant, one set of roles) sees it. The HTTP transport's
// backend runs the services in process under the request's token
// (package httpapi); ClientBackend calls a MIO server over HTTP.
//
// Errors a caller can act on are *Error values (their Message is shown
// to the agent); any other error is reported as an internal failure.
type Backend interface {
	// ConsumerAckWait returns a consumer's ack_wait; an *Error with Code
	// CodeNotFound when there is no such consumer.
	ConsumerAckWait(ctx context.Context, consumer string) (time.Duration, error)
	// CreateConsumer creates a consumer with the defaults of DefaultConsumer
	// and returns its ack_wait; a consumer by that name that exists — also
	// one created since ConsumerAckWait found none — is left as it is, and
	// its ack_wait returned.
	CreateConsumer(ctx context.Context, consumer string) (time.Duration, error)
	// Pull leases up to max messages, waiting up to wait for one.
	Pull(ctx context.Context, consumer string, max int, wait time.Duration) ([]Leased, error)
	// Settle acks, naks (after delay) or extends deliveries.
	Settle(ctx context.Context, consumer string, action Action, ids []uuid.UUID, delay time.Duration) ([]SettleResult, error)
	// Reply answers a delivery and acks it in one transaction; a lease
	// that is not live is an *Error with Code CodeLeaseLost.
	Reply(ctx context.Context, consumer string, deliveryID uuid.UUID, cmd envelope.SendCommand) (*Sent, error)
	// Send queues an outbound message.
	Send(ctx context.Context, cmd envelope.SendCommand) (*Sent, error)
	// StreamAppend adds delta to the open streamed reply id as append seq
	// (a seq taken before changes nothing; a gap or a finished stream is
	// an *Error with Code CodeConflict).
	StreamAppend(ctx context.Context, id uuid.UUID, seq int, delta string) error
	// StreamFinish ends the streamed reply id: text, when not nil,
	// replaces what was appended; seq, when not 0, is the last append's.
	StreamFinish(ctx context.Context, id uuid.UUID, seq int, text *string, rich json.RawMessage) error
	// React queues a reaction (POST /v1/reactions); a channel without
	// the reactions capability is an *Error with Code
	// CodeCapabilityMissing.
	React(ctx context.Context, cmd envelope.ReactionCommand) (*Sent, error)
	// SendStatus returns an outbound message with its timeline.
	SendStatus(ctx context.Context, id uuid.UUID) (*Outbound, error)
	// Typing shows the bot as typing; it returns the outcome ("sent",
	// "unsupported", "throttled", "failed") and the failure's text.
	Typing(ctx context.Context, accountID uuid.UUID, conversationID, threadID string) (status, detail string, err error)
	// Message returns one inbound message (its raw payload is dropped).
	Message(ctx context.Context, id uuid.UUID) (*envelope.Message, error)
	// History returns a page of a conversation, oldest first.
	History(ctx context.Context, q HistoryQuery) (*HistoryPage, error)
	// Attachment returns a stored attachment's bytes, at most
	// MaxAttachmentBytes.
	Attachment(ctx context.Context, id uuid.UUID) (*AttachmentData, error)
}

// MaxAttachmentBytes is the largest attachment served as a resource (its
// bytes travel base64-encoded in one JSON-RPC answer).
const MaxAttachmentBytes = 20 << 20

// DefaultConsumer is the consumer the tools use when none is named; a
// consumer the tools name that does not exist is created on first pull
// with deliver policy new and per-conversation ordering (PUT
// /v1/consumers/{name} configures it like any other).
const DefaultConsumer = "mcp"

// Defaults of a consumer created by a pull.
const (
	CreatedDeliverPolicy = "new"
	CreatedOrdering      = "conversation"
)

// Action is a settle action.
type Action string

// Settle actions of the tools.
const (
	ActionAck    Action = "ack"
	ActionNak    Action = "nak"
	ActionExtend Action = "extend"
)

// Leased is one delivery as a backend returns it.
type Leased struct {
	DeliveryID    uuid.UUID
	DeliveryCount int
	Message       *envelope.Message
	// Traceparent is the W3C trace context the message was received
	// under; "" when MIO does not trace.
	Traceparent string
}

// SettleResult reports one delivery id.
type SettleResult struct {
	DeliveryID string `json:"delivery_id" jsonschema:"the delivery id as given"`
	OK         bool   `json:"ok" jsonschema:"true when settled; false when the id is unknown or its lease expired (the message was or will be delivered again under a new id)"`
	Error      string `json:"error,omitempty" jsonschema:"why ok is false"`
}

// Sent is an accepted send or reply.
type Sent struct {
	ID           uuid.UUID
	HandoffState string
}

// Outbound is an outbound message's state.
type Outbound struct {
	ID                uuid.UUID                 `json:"id"`
	IdempotencyKey    string                    `json:"idempotency_key"`
	AccountID         uuid.UUID                 `json:"account_id"`
	ChannelType       string                    `json:"channel_type"`
	ConversationID    string                    `json:"conversation_id"`
	ThreadID          string                    `json:"thread_id,omitempty"`
	Text              string                    `json:"text"`
	RichContent       json.RawMessage           `json:"rich_content,omitempty"`
	Attachments       []envelope.SendAttachment `json:"attachments,omitempty"`
	EditOf            *uuid.UUID                `json:"edit_of,omitempty"`
	HandoffState      string                    `json:"handoff_state" jsonschema:"queued, sending, handed_off (the platform took it) or dead (given up: see last_error)"`
	ProviderState     string                    `json:"provider_state" jsonschema:"unknown, accepted, delivered, read, timed_out, bounced, dropped, complaint or failed"`
	Attempt           int                       `json:"attempt"`
	LastError         string                    `json:"last_error,omitempty"`
	ProviderMessageID string                    `json:"provider_message_id,omitempty"`
	NextAttemptAt     *time.Time                `json:"next_attempt_at,omitempty"`
	CreatedAt         time.Time                 `json:"created_at"`
	HandedOffAt       *time.Time                `json:"handed_off_at,omitempty"`
	DeadAt            *time.Time                `json:"dead_at,omitempty"`
}

// HistoryQuery selects a page of a conversation.
type HistoryQuery struct {
	AccountID      uuid.UUID
	ConversationID string
	Limit          int
	Before         string
}

// HistoryItem is one message of a conversation: Message (inbound) or
// Outbound set.
type HistoryItem struct {
	At       time.Time
	Message  *envelope.Message
	Outbound *Outbound
}

// HistoryPage is a page of a conversation, oldest first.
type HistoryPage struct {
	Items      []HistoryItem
	NextCursor string
}

// AttachmentData is a stored attachment's bytes.
type AttachmentData struct {
	MimeType string
	Data     []byte
}

// Error codes of *Error: the /v1 API's error codes.
const (
	CodeBadRequest  = "bad_request"
	CodeForbidden   = "forbidden"
	CodeNotFound    = "not_found"
	CodeLeaseLost   = "lease_lost"
	CodeConflict    = "conflict"
	CodeUnavailable = "unavailable"
	// CodeCapabilityMissing: the account's channel cannot do it.
	CodeCapabilityMissing = "capability_missing"
)

// Error is a failure the agent can act on; Message says what to do.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// hasCode reports whether err is an *Error with code.
func hasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
