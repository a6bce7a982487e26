package webhook

import (
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// outboundPayload is the body MIO sends: the inbound envelope shape
// (docs/contract.md §3) with the outbound fields, so a MIO webhook account can
// also receive it.
type outboundPayload struct {
	Type      string       `json:"type"`
	Timestamp string       `json:"timestamp"`
	Data      outboundData `json:"data"`
}

type outboundData struct {
	// MessageID is MIO's outbound message id.
	MessageID    string               `json:"message_id"`
	Conversation outboundConversation `json:"conversation"`
	ThreadID     string               `json:"thread_id,omitempty"`
	// ReplyToMessageID is the receiver's id of the message answered.
	ReplyToMessageID string                `json:"reply_to_message_id,omitempty"`
	Sender           outboundSender        `json:"sender"`
	Text             string                `json:"text"`
	RichContent      *envelope.RichContent `json:"rich_content,omitempty"`
	Attachments      []outboundAttachment  `json:"attachments,omitempty"`
	// EditOfProviderMessageID is, in message.updated, the id of the
	// message edited (what the endpoint answered for it, else its
	// webhook-id).
	EditOfProviderMessageID string `json:"edit_of_provider_message_id,omitempty"`
}

type outboundConversation struct {
	ID string `json:"id"`
}

type outboundSender struct {
	ID    string `json:"id"`
	IsBot bool   `json:"is_bot"`
}

type outboundAttachment struct {
	URL      string `json:"url"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
}

// newPayload builds the delivery body of msg.
func newPayload(event string, now time.Time, msg *channels.OutboundMessage) outboundPayload {
	p := outboundPayload{
		Type:      event,
		Timestamp: now.UTC().Format(time.RFC3339),
		Data: outboundData{
			MessageID:        msg.MessageID.String(),
			Conversation:     outboundConversation{ID: msg.ConversationID},
			ThreadID:         msg.ThreadID,
			ReplyToMessageID: msg.ReplyToProviderID,
			Sender:           outboundSender{ID: SenderID, IsBot: true},
			Text:             msg.Text,
		},
	}
	if event == EventMessageUpdated {
		p.Data.EditOfProviderMessageID = msg.EditProviderMessageID
	}
	p.Data.RichContent = msg.RichContent
	for _, a := range msg.Attachments {
		p.Data.Attachments = append(p.Data.Attachments, outboundAttachment{URL: a.URL, Name: a.Name, MimeType: a.MimeType})
	}
	return p
}
