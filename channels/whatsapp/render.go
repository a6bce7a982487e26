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
	maxListRows        = 10
	maxRowTitle        = 24
	maxRowID           = 200
	maxListButton      = 20
)

// DefaultListButton is the button that opens a list when the select has
// no placeholder (or one over 20 characters).
const DefaultListButton = "Choose"

// interactiveMsg is an interactive reply-buttons or list message.
type interactiveMsg struct {
	Type   string             `json:"type"` // button or list
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

// replyAction holds the reply buttons of a button message, or the button
// text and sections of a list message.
type replyAction struct {
	Buttons  []replyButton `json:"buttons,omitempty"`
	Button   string        `json:"button,omitempty"`
	Sections []listSection `json:"sections,omitempty"`
}

type listSection struct {
	Rows []listRow `json:"rows"`
}

type listRow struct {
	ID    string `json:"id"`
	Title string `json:"title"`
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
// ("label: url" or "[label]"). A card whose one control is a select of at
// most 10 options is an interactive list message (list); other selects
// are listed in the text. A text over 4096 characters is an error.
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
	if req := interactive(parts, title, blocks, rc.Buttons); req != nil && len(rc.Selects) == 0 {
		return req, nil
	}
	if req := list(parts, title, blocks, rc); req != nil {
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
	if lines := channels.SelectsText(rc.Selects); lines != "" {
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

// list returns an interactive list message for a card whose only control
// is one select of at most 10 options with titles of at most 24
// characters: a row per option, its id the select's action id and the
// option's value (envelope.RichSelect.Button), which WhatsApp reports in
// list_reply. Else nil.
func list(parts []string, title, blocks string, rc *envelope.RichContent) *sendRequest {
	if len(rc.Selects) != 1 || len(rc.Buttons) > 0 {
		return nil
	}
	sel := rc.Selects[0]
	if len(sel.Options) > maxListRows {
		return nil
	}
	button := sel.Placeholder
	if button == "" || utf8.RuneCountInString(button) > maxListButton {
		button = DefaultListButton
	}
	im := &interactiveMsg{Type: "list", Action: replyAction{Button: button, Sections: []listSection{{}}}}
	for _, o := range sel.Options {
		id := sel.Button(o).CallbackData()
		if utf8.RuneCountInString(o.Label) > maxRowTitle || utf8.RuneCountInString(id) > maxRowID {
			return nil
		}
		im.Action.Sections[0].Rows = append(im.Action.Sections[0].Rows, listRow{ID: id, Title: o.Label})
	}
	parts = slices.Clone(parts)
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
	if len(parts) == 0 && sel.Placeholder != "" {
		parts = append(parts, sel.Placeholder)
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
