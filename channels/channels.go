// Package channels defines the contract between MIO and its chat platform
// adapters: the small, context-first inbound interface every adapter
// implements, the typed errors adapters return, and the registry that maps
// channel slugs to adapters. Adapters live in channels/<slug>; they never
// import the database or HTTP layers.
//
// Internal to MIO; not a stable API.
package channels

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// Request is one webhook request as an adapter sees it. The HTTP layer has
// already bounded and read the body; adapters must verify signatures over
// Body exactly as received.
type Request struct {
	Method string
	Header http.Header
	Query  url.Values
	Body   []byte
	// Now is the clock used for timestamp tolerance checks.
	Now time.Time
}

// Reply is what the HTTP layer answers the platform with. For handshakes
// (Slack url_verification, Discord PING, Meta hub.challenge) it is the whole
// answer and nothing is written; when messages are present it is sent only
// after they are committed (for example Discord's deferred response).
type Reply struct {
	Status      int
	ContentType string
	Body        []byte
}

// Parsed is the result of parsing one verified webhook request.
type Parsed struct {
	// Messages are canonical messages to store. Adapters fill every field
	// they know except ID, TenantID, AccountID and ReceivedAt (the caller
	// sets those) and leave attachment IDs empty. SourceMessageID must be
	// set: it is the dedup key.
	Messages []envelope.Message
	// Statuses are provider delivery receipts (WhatsApp statuses).
	Statuses []ProviderStatus
	// Reply, when non-nil, replaces the default 200 empty answer.
	Reply *Reply
	// AfterCommit, when set, is called once the messages are committed
	// (or found to be duplicates), apart from the request, with a bounded
	// context: the platform acknowledgement that must follow the durable
	// write but need not hold the answer (Telegram answerCallbackQuery).
	// Best effort: its error is logged.
	AfterCommit func(ctx context.Context) error
	// Ignored says, one line each, which parts of an authentic request
	// were left out on purpose (for example WhatsApp changes addressed to
	// another phone number). The request is still answered 200; the HTTP
	// layer logs these lines. Never secrets or message text.
	Ignored []string
}

// ProviderStatus is a delivery receipt a platform reports for a message MIO
// sent. Receipts are deduplicated on (ProviderMessageID, Status).
type ProviderStatus struct {
	ProviderMessageID string          `json:"provider_message_id"`
	Status            string          `json:"status"`
	Timestamp         time.Time       `json:"timestamp"`
	RecipientID       string          `json:"recipient_id,omitempty"`
	Error             string          `json:"error,omitempty"`
	Raw               json.RawMessage `json:"raw,omitempty"`
}

// Inbound handles the webhooks of one installed account.
type Inbound interface {
	// Verify authenticates the request (signature, token or handshake
	// token). A request that is not authentic returns an error wrapping
	// ErrUnauthorized.
	Verify(ctx context.Context, req *Request) error
	// Parse turns a verified request into messages, statuses and an
	// optional reply. Malformed input returns a *BadRequestError;
	// unsupported content types return an error wrapping
	// ErrUnsupportedMediaType. Parse must never panic on any input.
	Parse(ctx context.Context, req *Request) (*Parsed, error)
}

// Account is what an adapter knows of one installed account. Settings is
// the account's plain (non-secret) JSON settings; Credentials is its
// decrypted credentials JSON and WebhookSecret its decrypted webhook
// verification secret. Each adapter decodes these into its own typed
// Config.
type Account struct {
	ID            uuid.UUID
	TenantID      uuid.UUID
	ExternalID    string
	Settings      json.RawMessage
	Credentials   json.RawMessage
	WebhookSecret string
	// Tokens gives the account's renewed access tokens when its
	// credentials hold a grant (TokenGranter); nil otherwise, and when
	// adapters only validate a configuration.
	Tokens TokenSource
}

// Capabilities is what a channel supports (CapabilitiesOf).
type Capabilities struct {
	Edit         bool `json:"edit"`
	Threads      bool `json:"threads"`
	Attachments  bool `json:"attachments"`
	Receipts     bool `json:"receipts"`
	Interactions bool `json:"interactions"`
	Reactions    bool `json:"reactions"`
}

// ConfigDescriber is implemented by channels whose account configuration
// has defaults an operator should see (Zoho Cliq's payload mapping):
// DescribeConfig returns the configuration in force for the given account
// settings, as JSON-encodable data without secrets. Account creation
// shows it.
type ConfigDescriber interface {
	DescribeConfig(settings json.RawMessage) (any, error)
}

// Exampler is implemented by every adapter: ExampleAccount returns an
// account (no ids) that each of its configuration decoders accepts,
// holding every key its Info schema names as required. The registry's
// tests (channels/builtin TestSchemasMatchDecoders) take it from the
// adapter, so a new channel brings its own.
type Exampler interface {
	ExampleAccount() Account
}

// Channel is one platform adapter.
type Channel interface {
	// Type is the channel slug (envelope.ChannelSlack, ...).
	Type() string
	// Info describes the channel (see Describe for its capabilities).
	Info() Info
	// NewInbound validates the account's configuration and returns its
	// webhook handler. An invalid configuration returns an error wrapping
	// ErrInvalidConfig.
	NewInbound(acct Account) (Inbound, error)
}
