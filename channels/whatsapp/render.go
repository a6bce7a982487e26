package whatsapp

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Cloud API limits.
const (
	maxTextBody        = 4096 // characters of a text message
	maxInteractiveBody = 1024 // characters of an interactive body
	maxHeaderText      = 60
	maxReplyButtons    = 3
	maxReplyTitle      = 20
	maxReplyID         = 256
)

// interactiveMsg is an interactive reply-buttons message.
type interactiveMsg struct {
	Type   string             `json:"type"` // button
	Header *interactiveHeader `json:"header,omitempty"`
	Body   textField          `json:"body"`
	Action replyAction        `json:"action"`
}

type interactiveHeader struct {
	Type string `json:"type"` // text
	Text string `json:"text"`
}

type textField struct {
	Text string `json:"text"`
}

type replyAction struct {
	Buttons []replyButton `json:"buttons"`
}

type replyButton struct {
	Type  string     `json:"type"` // reply
	Reply replyTitle `json:"reply"`
}

type replyTitle struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// render builds the messages body of msg (without "to" and "context").
// The text is msg.Text, one line per attachment URL, then the card as
// plain text (title, blocks). When the card has 1 to 3 buttons, none of
// them a URL button, with titles of at most 20 characters and distinct
// action ids and values (the reply id, envelope.RichButton.CallbackData),
// the message is an interactive reply-buttons message (the title
// as its header when it fits in 60 characters, body at most 1024
// characters); otherwise it is a text message listing the buttons
// ("label: url" or "[label]"). A text over 4096 characters is an error.
func render(msg *channels.OutboundMessage) (*sendRequest, error) {
	var parts []string
	if strings.TrimSpace(msg.Text) != "" {
		parts = append(parts, msg.Text)
	}
	parts = append(parts, channels.AttachmentLines(msg.Attachments)...)
	rc := msg.RichContent
	if rc == nil {
		rc = &envelope.RichContent{}
	}
	for i, b := range rc.Buttons {
		if b.Label == "" {
			return nil, fmt.Errorf("button %d has no label", i)
		}
	}
	title := strings.TrimSpace(rc.Title)
	blocks := channels.BlocksText(rc.Blocks)
	if req := interactive(parts, title, blocks, rc.Buttons); req != nil {
		return req, nil
	}
	if title != "" {
		parts = append(parts, title)
	}
	if blocks != "" {
		parts = append(parts, blocks)
	}
	if lines := buttonLines(rc.Buttons); lines != "" {
		parts = append(parts, lines)
	}
	text := strings.Join(parts, "\n\n")
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "":
		return nil, errors.New("empty message: no text, rich content or attachments")
	case n > maxTextBody:
		return nil, fmt.Errorf("text is %d characters, WhatsApp allows %d", n, maxTextBody)
	}
	return &sendRequest{MessagingProduct: "whatsapp", Type: "text", Text: &textBody{Body: text}}, nil
}

// interactive returns a reply-buttons message when the buttons and text
// fit one, else nil.
func interactive(parts []string, title, blocks string, buttons []envelope.RichButton) *sendRequest {
	if len(buttons) == 0 || len(buttons) > maxReplyButtons {
		return nil
	}
	parts = slices.Clone(parts)
	im := &interactiveMsg{Type: "button"}
	seen := map[string]bool{}
	for _, b := range buttons {
		id := b.CallbackData()
		if b.URL != "" || utf8.RuneCountInString(b.Label) > maxReplyTitle || utf8.RuneCountInString(id) > maxReplyID || seen[id] {
			return nil
		}
		seen[id] = true
		im.Action.Buttons = append(im.Action.Buttons, replyButton{Type: "reply", Reply: replyTitle{ID: id, Title: b.Label}})
	}
	if title != "" {
		if utf8.RuneCountInString(title) <= maxHeaderText {
			im.Header = &interactiveHeader{Type: "text", Text: title}
		} else {
			parts = append(parts, title)
		}
	}
	if blocks != "" {
		parts = append(parts, blocks)
	}
	im.Body.Text = strings.Join(parts, "\n\n")
	if strings.TrimSpace(im.Body.Text) == "" || utf8.RuneCountInString(im.Body.Text) > maxInteractiveBody {
		return nil
	}
	return &sendRequest{MessagingProduct: "whatsapp", Type: "interactive", Interactive: im}
}

// buttonLines lists buttons as text: "label: url" or "[label]".
func buttonLines(buttons []envelope.RichButton) string {
	lines := make([]string, 0, len(buttons))
	for _, b := range buttons {
		if b.URL != "" {
			lines = append(lines, b.Label+": "+b.URL)
		} else {
			lines = append(lines, "["+b.Label+"]")
		}
	}
	return strings.Join(lines, "\n")
}
