// Package envelope holds MIO's canonical wire types: the inbound message
// envelope mio.v1.Message and the outbound SendCommand. Every other package
// (channel adapters, the database layer, the HTTP API, workers and the Go
// client) speaks these types; this package imports nothing of MIO.
package envelope

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Channel type slugs the adapters and tests name. Which channels exist is
// the channel registry's (channels/builtin.Registry), not a list here: a
// new channel may name its slug in its own folder.
const (
	ChannelSlack      = "slack"
	ChannelTelegram   = "telegram"
	ChannelDiscord    = "discord"
	ChannelZohoCliq   = "zoho_cliq"
	ChannelWhatsApp   = "whatsapp"
	ChannelWebhook    = "webhook"
	ChannelGoogleChat = "google_chat"
	ChannelTeams      = "teams"
)

// MaxChannelTypeLen is the longest channel slug.
const MaxChannelTypeLen = 32

// ValidChannelType reports whether s has the form of a channel slug: a
// lower-case ASCII letter, then lower-case letters, digits and
// underscores, at most MaxChannelTypeLen bytes. It appears in webhook
// URLs, metrics labels and archive partitions. Whether a channel of that
// slug exists is the registry's answer.
func ValidChannelType(s string) bool {
	if s == "" || len(s) > MaxChannelTypeLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// Conversation types.
const (
	ConversationDM      = "dm"
	ConversationGroup   = "group"
	ConversationChannel = "channel"
)

// Attachment kinds.
const (
	KindImage   = "image"
	KindFile    = "file"
	KindAudio   = "audio"
	KindVideo   = "video"
	KindSticker = "sticker"
)

// Attachment statuses.
const (
	AttachmentPending = "pending"
	AttachmentStored  = "stored"
	AttachmentFailed  = "failed"
	AttachmentSkipped = "skipped"
)

// Message kinds: what an envelope records. A message is something a
// person posted (its edits and deletes included); an interaction is a
// click on a control MIO sent (a button of rich_content); a reaction is an
// emoji added to or removed from a message.
const (
	KindMessage     = "message"
	KindInteraction = "interaction"
	KindReaction    = "reaction"
)

// Message is the canonical inbound envelope, mio.v1.Message. JSON field names
// are part of MIO's external contract (docs/contract.md §3).
type Message struct {
	// ID is assigned by MIO when the message is committed.
	ID          uuid.UUID `json:"id"`
	TenantID    uuid.UUID `json:"tenant_id"`
	AccountID   uuid.UUID `json:"account_id"`
	ChannelType string    `json:"channel_type"`
	// Kind is KindInteraction or KindReaction; empty (left out of the
	// JSON) for messages (KindOf).
	Kind string `json:"kind,omitempty"`
	// Interaction is set on KindInteraction envelopes, Reaction on
	// KindReaction envelopes.
	Interaction *Interaction `json:"interaction,omitempty"`
	Reaction    *Reaction    `json:"reaction,omitempty"`
	// SourceMessageID is the platform's stable id used for deduplication
	// (Slack event_id, Telegram update_id, WhatsApp wamid, webhook-id, ...).
	SourceMessageID string       `json:"source_message_id"`
	Conversation    Conversation `json:"conversation"`
	ThreadID        string       `json:"thread_id,omitempty"`
	// ReplyToSourceID is the platform id of the message this one quotes or
	// answers, when the platform says so.
	ReplyToSourceID string       `json:"reply_to_source_id,omitempty"`
	Sender          Sender       `json:"sender"`
	Text            string       `json:"text"`
	Attachments     []Attachment `json:"attachments"`
	Edited          bool         `json:"edited"`
	Deleted         bool         `json:"deleted"`
	// EditOf, on an edit or delete, points at the message it changes (nil
	// on other messages and where the platform does not say).
	EditOf *EditRef `json:"edit_of,omitempty"`
	// PlatformMessageID is the platform's id of this message within its
	// conversation (Slack ts, Telegram message_id, Discord message id,
	// WhatsApp wamid, webhook data.message_id): what a later edit names in
	// EditOf.PlatformMessageID. Set by adapters on messages an edit can
	// refer to; kept by MIO to link edits, not part of the JSON envelope.
	PlatformMessageID string `json:"-"`
	// SentAt is the platform's timestamp (zero when the platform gives none).
	SentAt time.Time `json:"sent_at"`
	// ReceivedAt is MIO's commit time.
	ReceivedAt time.Time `json:"received_at"`
	// Raw is the original payload, kept up to a bounded size.
	Raw     json.RawMessage `json:"raw,omitempty"`
	TraceID string          `json:"trace_id,omitempty"`
}

// KindOf returns m's kind: Kind, or KindMessage when it has none.
func KindOf(m *Message) string {
	if m.Kind == "" {
		return KindMessage
	}
	return m.Kind
}

// Interaction is a click on a control MIO rendered from a rich_content
// button (or select menu): the button's action id and value as the agent
// set them, and the platform id of the message the control was attached
// to (the provider_message_id of the send that carried it).
type Interaction struct {
	ActionID string `json:"action_id"`
	Value    string `json:"value,omitempty"`
	// Values are the options chosen in a select menu (Discord string
	// selects); nil for buttons.
	Values    []string `json:"values,omitempty"`
	MessageID string   `json:"message_id,omitempty"`
}

// Reaction is an emoji added to (Added) or removed from a message, the
// platform's message id. Emoji is the character itself where the platform
// sends one (Telegram, Discord, WhatsApp) and the platform's name
// otherwise (Slack "thumbsup"); custom emoji are the platform's name or id.
type Reaction struct {
	Emoji     string `json:"emoji"`
	Added     bool   `json:"added"`
	MessageID string `json:"message_id"`
}

// ReactionCommand is an agent's reaction, POSTed to /v1/reactions: add
// (or, with Remove, take back) Emoji on the platform message MessageID
// (an inbound envelope's platform message id or an outbound message's
// provider_message_id) in ConversationID. Without an IdempotencyKey each
// command is a new reaction (a key derived from the fields would make add,
// remove, add a replay of the first add).
type ReactionCommand struct {
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	AccountID      uuid.UUID `json:"account_id"`
	ConversationID string    `json:"conversation_id"`
	MessageID      string    `json:"message_id"`
	Emoji          string    `json:"emoji"`
	Remove         bool      `json:"remove,omitempty"`
}

// ReactionSend is a reaction MIO sends, as GET /v1/outbound/{id} shows
// it ("reaction", with "kind": "reaction").
type ReactionSend struct {
	MessageID string `json:"message_id"`
	Emoji     string `json:"emoji"`
	Remove    bool   `json:"remove,omitempty"`
}

// EditRef names the original message of an edit or delete. Adapters set
// PlatformMessageID (and SourceMessageID to the same value); when MIO
// stored the original in the same account and conversation, ingest sets
// ID and SourceMessageID to the stored message's.
type EditRef struct {
	// ID is the original's MIO message id, when MIO stored it.
	ID *uuid.UUID `json:"id,omitempty"`
	// SourceMessageID is the original's source_message_id when MIO stored
	// it; otherwise the platform's id of the original (equal to
	// PlatformMessageID; the same as its dedup key on WhatsApp and
	// Discord, not on Slack, Telegram or the webhook channel, whose dedup
	// keys are event ids).
	SourceMessageID string `json:"source_message_id"`
	// PlatformMessageID is the platform's id of the original message as
	// the edit carries it (Slack ts, Telegram message_id, ...).
	PlatformMessageID string `json:"platform_message_id"`
}

// NewEditRef returns the reference an adapter sets on an edit or delete
// of the platform message platformID.
func NewEditRef(platformID string) *EditRef {
	if platformID == "" {
		return nil
	}
	return &EditRef{SourceMessageID: platformID, PlatformMessageID: platformID}
}

// Conversation identifies where a message was posted.
type Conversation struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title,omitempty"`
}

// Sender identifies who posted a message.
type Sender struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name,omitempty"`
	IsBot       bool   `json:"is_bot"`
}

// Attachment is one file carried by a message. Adapters create attachments
// with Status pending and a Source; the enrich worker fetches the bytes and
// fills StorageKey, ContentSHA256 and Size.
type Attachment struct {
	ID            string            `json:"id"`
	Kind          string            `json:"kind"`
	Name          string            `json:"name,omitempty"`
	MimeType      string            `json:"mime_type,omitempty"`
	Size          int64             `json:"size,omitempty"`
	Status        string            `json:"status"`
	StorageKey    string            `json:"storage_key,omitempty"`
	ContentSHA256 string            `json:"content_sha256,omitempty"`
	Error         string            `json:"error,omitempty"`
	Source        *AttachmentSource `json:"source,omitempty"`
}

// AttachmentSource says where the platform keeps an attachment's bytes: a
// URL (Slack url_private, Discord CDN, webhook URL) or a platform file
// reference to resolve first (Telegram file_id, WhatsApp media id).
type AttachmentSource struct {
	URL string `json:"url,omitempty"`
	Ref string `json:"ref,omitempty"`
}

// SendCommand is an agent's reply, POSTed to /v1/outbound (docs/contract.md §3).
type SendCommand struct {
	IdempotencyKey string           `json:"idempotency_key"`
	AccountID      uuid.UUID        `json:"account_id"`
	ConversationID string           `json:"conversation_id"`
	ThreadID       string           `json:"thread_id,omitempty"`
	Text           string           `json:"text"`
	RichContent    json.RawMessage  `json:"rich_content,omitempty"`
	Attachments    []SendAttachment `json:"attachments,omitempty"`
	// EditOf is an earlier outbound message id whose provider message the
	// adapter edits instead of sending a new one.
	EditOf *uuid.UUID `json:"edit_of,omitempty"`
	// Traceparent is the W3C trace context the send was made under, kept
	// with the outbox row so its dispatch continues the trace. Never part
	// of the JSON body: the server sets it from the request's traceparent
	// header.
	Traceparent string `json:"-"`
	// Stream opens a reply whose text grows: Text is its start (it may be
	// empty), appends add to it and a finish ends it (POST
	// /v1/outbound/{id}/append and /finish).
	Stream bool `json:"stream,omitempty"`
}

// SendAttachment is a URL-backed outbound attachment.
type SendAttachment struct {
	URL      string `json:"url"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
}

// RichContent is the portable rich outbound model: a card with a title,
// blocks, buttons and select menus. Adapters render it natively where the
// platform can (Slack blocks, Telegram inline keyboard, Discord
// components) and fall back to Text elsewhere.
type RichContent struct {
	Title   string       `json:"title,omitempty"`
	Blocks  []RichBlock  `json:"blocks,omitempty"`
	Buttons []RichButton `json:"buttons,omitempty"`
	Selects []RichSelect `json:"selects,omitempty"`
}

// RichSelect is a select menu: the person picks one of Options, and the
// choice comes back as an interaction envelope carrying ActionID and the
// option's Value (also in Values). Where a platform has no menu it is
// rendered as one button per option (Telegram) or listed as text.
type RichSelect struct {
	// Type is "select" or empty.
	Type        string       `json:"type,omitempty"`
	ActionID    string       `json:"action_id"`
	Placeholder string       `json:"placeholder,omitempty"`
	Options     []RichOption `json:"options"`
}

// RichOption is one choice of a select menu.
type RichOption struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Button returns the callback button that stands for option o of select
// s where a platform renders a menu as buttons: its click reports the
// select's action id and the option's value.
func (s RichSelect) Button(o RichOption) RichButton {
	return RichButton{Label: o.Label, ActionID: s.ActionID, Value: o.Value}
}

// Rich block types.
const (
	BlockText  = "text"
	BlockList  = "list"
	BlockTable = "table"
	BlockLabel = "label"
	BlockImage = "image"
)

// RichBlock is one block of a card.
type RichBlock struct {
	Type  string     `json:"type"`
	Text  string     `json:"text,omitempty"`
	Items []string   `json:"items,omitempty"` // list
	Rows  [][]string `json:"rows,omitempty"`  // table, first row is the header
	URL   string     `json:"url,omitempty"`   // image
	Alt   string     `json:"alt,omitempty"`   // image
}

// Button styles (RichButton.Style): where the platform has them, a
// primary (accented) or a danger (red) button; default a plain one.
const (
	ButtonPrimary = "primary"
	ButtonDanger  = "danger"
)

// RichButton is a button: a URL button when URL is set, else a callback
// button. A click on a callback button comes back as an interaction
// envelope carrying ActionID and Value. Text is accepted for Label in
// JSON ({"type": "button", "action_id", "text", "value", "style"}).
type RichButton struct {
	// Type is "button" or empty.
	Type  string `json:"type,omitempty"`
	Label string `json:"label"`
	// ActionID names the action an interaction reports; empty: Value
	// (else Label) is sent as it is, the way buttons were before action
	// ids, and comes back as the interaction's action_id.
	ActionID string `json:"action_id,omitempty"`
	Value    string `json:"value,omitempty"`
	URL      string `json:"url,omitempty"`
	// Style is ButtonPrimary, ButtonDanger or empty.
	Style string `json:"style,omitempty"`
}

// UnmarshalJSON reads a button, taking "text" for "label" when only the
// former is set.
func (b *RichButton) UnmarshalJSON(data []byte) error {
	type plain RichButton
	var v struct {
		plain
		Text string `json:"text"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*b = RichButton(v.plain)
	if b.Label == "" {
		b.Label = v.Text
	}
	return nil
}

// CallbackSeparator separates a button's action id from its value in a
// platform's callback field (Telegram callback_data, Discord custom_id).
const CallbackSeparator = ":"

// CallbackData is what a callback button carries on platforms with one
// opaque callback string: ActionID, the separator and Value when ActionID
// is set; otherwise Value, else Label.
func (b RichButton) CallbackData() string {
	if b.ActionID == "" {
		if b.Value != "" {
			return b.Value
		}
		return b.Label
	}
	if b.Value == "" {
		return b.ActionID
	}
	return b.ActionID + CallbackSeparator + b.Value
}

// SplitCallbackData reverses CallbackData: the action id before the first
// separator and the value after it (the whole string and "" without one).
func SplitCallbackData(data string) (actionID, value string) {
	actionID, value, _ = strings.Cut(data, CallbackSeparator)
	return actionID, value
}

// WithRaw returns a stored envelope (a JSON object of Message, stored
// without its raw payload) with raw spliced in as "raw", without decoding
// the envelope: the message as the pull API and the NATS bridge deliver
// it. raw is left out when it is not valid JSON, and stored is returned as
// it is when it is not an object.
func WithRaw(stored, raw []byte) []byte {
	stored = bytes.TrimSpace(stored)
	if len(raw) == 0 || len(stored) < 2 || stored[0] != '{' || stored[len(stored)-1] != '}' || !json.Valid(raw) {
		return stored
	}
	out := make([]byte, 0, len(stored)+len(raw)+8)
	out = append(out, stored[:len(stored)-1]...)
	if len(bytes.TrimSpace(stored[1:len(stored)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"raw":`...)
	out = append(out, raw...)
	return append(out, '}')
}
