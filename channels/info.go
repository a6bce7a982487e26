package channels

import (
	"context"
	"time"

	"github.com/miohq/mio/envelope"
)

// Capability names, as GET /admin/v1/channel-types lists them.
const (
	CapEdit        = "edit"
	CapDelete      = "delete"
	CapTyping      = "typing"
	CapHistory     = "history"
	CapReceipts    = "receipts"
	CapRichContent = "rich_content"
	CapAttachments = "attachments"
	CapThreads     = "threads"
	CapSource      = "source"
	CapInstall     = "install"
	CapStreaming   = "streaming"
	// CapNativeStreaming: streamed replies use the platform's own
	// streaming where the conversation allows it (Streamer).
	CapNativeStreaming = "native_streaming"
	// CapInteractions: clicks on rich_content buttons come back as
	// interaction envelopes.
	CapInteractions = "interactions"
	// CapReactions: POST /v1/reactions reaches the platform (Reactor).
	CapReactions = "reactions"
)

// DefaultStreamEditInterval is the edit interval of streamed replies on
// a channel that declares none (Info.StreamEditInterval).
const DefaultStreamEditInterval = time.Second

// Rate limit scopes: one bucket per account, or one per (account,
// conversation) where the platform limits each channel or chat.
const (
	ScopeAccount      = "account"
	ScopeConversation = "conversation"
)

// RateLimit is one default token bucket of a channel's sends.
type RateLimit struct {
	Scope  string  `json:"key"`
	PerSec float64 `json:"per_sec"`
	Burst  float64 `json:"burst"`
}

// Setup is what the console's account wizard asks for a channel and the
// steps it shows with the webhook URL (docs/channels.md has the detail).
type Setup struct {
	// SettingsExample, CredentialsExample: JSON placeholders for the form.
	SettingsExample    string `json:"settings_example,omitempty"`
	CredentialsExample string `json:"credentials_example,omitempty"`
	// SecretLabel names the webhook secret field ("": none asked).
	SecretLabel string   `json:"secret_label,omitempty"`
	Steps       []string `json:"steps,omitempty"`
}

// JSON types of a Field.
const (
	TypeString  = "string"
	TypeBoolean = "boolean"
	TypeInteger = "integer"
	TypeArray   = "array"
	TypeObject  = "object"
)

// Field is one key of an account's settings or credentials object: the
// adapter's Config decoder reads it with that JSON type
// (channels/builtin's TestSchemasMatchDecoders holds the two together).
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Required: the adapter's NewInbound or NewOutbound refuses an
	// account without it.
	Required bool `json:"required"`
	// Secret: stored encrypted, never shown (every credentials field).
	Secret      bool   `json:"secret"`
	Description string `json:"description"`
}

// APIBaseURLField is the settings field of adapters whose platform API
// base an account may move (APIBasePolicy.AccountAPIBase).
func APIBaseURLField(def string) Field {
	return Field{Name: SettingAPIBaseURL, Type: TypeString,
		Description: "The platform API base URL (a proxy, a regional host, a local fake). Default " + def + "."}
}

// Info is what an adapter says about its channel. Capabilities that an
// optional interface stands for (Editor, Deleter, Typer, Reactor,
// Streamer, AttachmentFetcher, HistoryReader, HistoryPager, Source) are not
// declared here: Describe derives them from the adapter and its Outbound,
// so they cannot drift.
type Info struct {
	DisplayName string
	// Outbound is a zero value of the adapter's sender type (for example
	// (*outbound)(nil)); Describe checks the interfaces it implements.
	Outbound Outbound
	// Declared capabilities that no interface stands for.
	Threads     bool
	Receipts    bool
	RichContent bool
	// Interactions: the adapter turns clicks on the buttons it renders
	// into interaction envelopes (an inbound ability no interface marks).
	Interactions bool
	// RateLimits are the send limits when the account sets none; empty
	// means unlimited.
	RateLimits []RateLimit
	// StreamEditInterval is how often a streamed reply's message may be
	// edited (the platform's edit rate for one message); the dispatcher
	// shows the newest text at most that often. Zero:
	// DefaultStreamEditInterval.
	StreamEditInterval time.Duration
	// HistoryRateLimit is the bucket of an account's history reads (the
	// catch-up reconciler's, shared by replicas); Scope is ignored (one
	// per account). Zero: 1 call/s, burst 1.
	HistoryRateLimit RateLimit
	// Settings and Credentials are the keys of the account's settings
	// and credentials objects, in the order a form shows them.
	Settings    []Field
	Credentials []Field
	Setup       Setup
}

// Deleter is implemented by outbound adapters that can delete a message
// they sent: the platform's message providerMessageID in conversationID
// (Teams DELETE /v3/conversations/{id}/activities/{id}, Google Chat
// DELETE /v1/{message name}; Slack chat.delete, Telegram deleteMessage and
// Discord DELETE /channels/{id}/messages/{id} would fit it too). The
// delete capability is derived from it.
type Deleter interface {
	Delete(ctx context.Context, conversationID, providerMessageID string) error
}

// HistoryReader is a channel that reads a conversation's messages posted
// after a platform message id, oldest first, with the dedup keys of its
// live intake (Discord): one page, and next, the id to read on after (""
// = the page reached the conversation's newest message).
type HistoryReader interface {
	History(ctx context.Context, acct Account, conv envelope.Conversation, after string, limit int) (msgs []envelope.Message, next string, err error)
}

// HistoryPager is a channel whose history reads newest first (Slack
// conversations.history): one page of the messages after oldest and
// before latest ("" = now), oldest first, and next, the latest to read
// the rest of the window with ("" = nothing older in it).
type HistoryPager interface {
	HistoryPage(ctx context.Context, acct Account, conv envelope.Conversation, oldest, latest string, limit int) (msgs []envelope.Message, next string, err error)
}

// Description is a channel as the registry describes it.
type Description struct {
	Slug         string      `json:"slug"`
	DisplayName  string      `json:"display_name"`
	Capabilities []string    `json:"capabilities"`
	RateLimits   []RateLimit `json:"default_rate_limits"`
	Settings     []Field     `json:"settings_schema"`
	Credentials  []Field     `json:"credentials_schema"`
	Setup        Setup       `json:"setup"`
}

// CapabilitiesOf returns what ch supports, derived from the interfaces
// it and its sender implement plus its declared Info.
func CapabilitiesOf(ch Channel) Capabilities {
	info := ch.Info()
	_, edit := info.Outbound.(Editor)
	_, att := ch.(AttachmentFetcher)
	_, react := info.Outbound.(Reactor)
	return Capabilities{Edit: edit, Threads: info.Threads, Attachments: att, Receipts: info.Receipts,
		Interactions: info.Interactions, Reactions: react}
}

// Describe returns ch's description, capabilities in a fixed order.
func Describe(ch Channel) Description {
	info := ch.Info()
	caps := CapabilitiesOf(ch)
	_, typing := info.Outbound.(Typer)
	_, del := info.Outbound.(Deleter)
	_, source := ch.(Source)
	_, reads := ch.(HistoryReader)
	_, pages := ch.(HistoryPager)
	_, installs := ch.(Installer)
	_, native := info.Outbound.(Streamer)
	var list []string
	for _, c := range []struct {
		name string
		on   bool
	}{
		{CapEdit, caps.Edit}, {CapDelete, del}, {CapTyping, typing}, {CapHistory, reads || pages},
		{CapReceipts, caps.Receipts}, {CapRichContent, info.RichContent},
		{CapAttachments, caps.Attachments}, {CapThreads, caps.Threads}, {CapStreaming, caps.Edit},
		{CapNativeStreaming, native}, {CapSource, source}, {CapInstall, installs},
		{CapInteractions, caps.Interactions}, {CapReactions, caps.Reactions},
	} {
		if c.on {
			list = append(list, c.name)
		}
	}
	rl := info.RateLimits
	if rl == nil {
		rl = []RateLimit{}
	}
	return Description{Slug: ch.Type(), DisplayName: info.DisplayName, Capabilities: list, RateLimits: rl,
		Settings: nonNil(info.Settings), Credentials: nonNil(info.Credentials), Setup: info.Setup}
}

// nonNil makes an absent schema an empty list in JSON.
func nonNil(fs []Field) []Field {
	if fs == nil {
		return []Field{}
	}
	return fs
}
