// Package envelope holds MIO's canonical wire types: the inbound message
// envelope mio.v1.Message and the outbound SendCommand. Every other package
// (channel adapters, the database layer, the HTTP API, workers and the Go
// client) speaks these types; this package imports nothing of MIO.
package envelope

import (
	"bytes"
	"encoding/json"
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

// Message is the canonical inbound envelope, mio.v1.Message. JSON field names
// are part of MIO's external contract (docs/contract.md §3).
type Message struct {
	// ID is assigned by MIO when the message is committed.
	ID          uuid.UUID `json:"id"`
	TenantID    uuid.UUID `json:"tenant_id"`
	AccountID   uuid.UUID `json:"account_id"`
	ChannelType string    `json:"channel_type"`
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
// blocks and buttons. Adapters render it natively where the platform can
// (Slack blocks, Telegram inline keyboard, Discord components) and fall
// back to Text elsewhere.
type RichContent struct {
	Title   string       `json:"title,omitempty"`
	Blocks  []RichBlock  `json:"blocks,omitempty"`
	Buttons []RichButton `json:"buttons,omitempty"`
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

// RichButton is a button: a URL button when URL is set, else a callback
// button carrying Value.
type RichButton struct {
	Label string `json:"label"`
	Value string `json:"value,omitempty"`
	URL   string `json:"url,omitempty"`
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
