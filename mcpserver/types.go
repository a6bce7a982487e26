package mcpserver

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// Message is an inbound message as the tools show it: the mio.v1
// envelope without its raw platform payload, each attachment with the
// resource URI its bytes are read from.
type Message struct {
	ID              uuid.UUID             `json:"id" jsonschema:"MIO's message id (get_message, mio://messages/{id})"`
	AccountID       uuid.UUID             `json:"account_id" jsonschema:"the chat account it arrived on: send_message and show_typing take it"`
	ChannelType     string                `json:"channel_type" jsonschema:"slack, telegram, discord, zoho_cliq, whatsapp or webhook"`
	SourceMessageID string                `json:"source_message_id"`
	Conversation    envelope.Conversation `json:"conversation" jsonschema:"where it was posted: conversation.id is the conversation_id of send_message, show_typing and conversation_history"`
	ThreadID        string                `json:"thread_id,omitempty"`
	ReplyToSourceID string                `json:"reply_to_source_id,omitempty"`
	Sender          envelope.Sender       `json:"sender"`
	Text            string                `json:"text"`
	Attachments     []Attachment          `json:"attachments"`
	Edited          bool                  `json:"edited"`
	Deleted         bool                  `json:"deleted"`
	EditOf          *envelope.EditRef     `json:"edit_of,omitempty"`
	SentAt          time.Time             `json:"sent_at"`
	ReceivedAt      time.Time             `json:"received_at"`
}

// Attachment is a file of an inbound message.
type Attachment struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Status   string `json:"status" jsonschema:"pending (not fetched yet), stored (read it at uri) or failed"`
	Error    string `json:"error,omitempty"`
	URI      string `json:"uri" jsonschema:"the resource holding the bytes: mio://attachments/{id}"`
}

// messageOf is m as the tools show it.
func messageOf(m *envelope.Message) Message {
	out := Message{ID: m.ID, AccountID: m.AccountID, ChannelType: m.ChannelType, SourceMessageID: m.SourceMessageID,
		Conversation: m.Conversation, ThreadID: m.ThreadID, ReplyToSourceID: m.ReplyToSourceID, Sender: m.Sender,
		Text: m.Text, Attachments: make([]Attachment, len(m.Attachments)), Edited: m.Edited, Deleted: m.Deleted,
		EditOf: m.EditOf, SentAt: m.SentAt, ReceivedAt: m.ReceivedAt}
	for i, a := range m.Attachments {
		out.Attachments[i] = Attachment{ID: a.ID, Kind: a.Kind, Name: a.Name, MimeType: a.MimeType, Size: a.Size,
			Status: a.Status, Error: a.Error, URI: attachmentURI(a.ID)}
	}
	return out
}

func attachmentURI(id string) string { return "mio://attachments/" + id }

// schemaFor infers T's JSON schema: UUIDs are strings, raw JSON any
// value.
func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[uuid.UUID](): {Type: "string", Format: "uuid"},
		// The raw JSON fields are objects or absent (rich_content). Not
		// the empty schema: it is written as true, which clients reject
		// as a property's schema.
		reflect.TypeFor[json.RawMessage](): {Type: "object"},
	}})
	if err != nil {
		panic("mcpserver: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	return s
}
