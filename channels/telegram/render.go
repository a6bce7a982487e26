package telegram

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Bot API limits.
const (
	maxTextLength   = 4096 // characters of a message text
	maxCallbackData = 64   // bytes of a button's callback_data
)

// inlineKeyboard is a reply_markup InlineKeyboardMarkup.
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

// inlineButton is an InlineKeyboardButton: a URL button or a callback
// button.
type inlineButton struct {
	Text         string `json:"text"`
	URL          string `json:"url,omitempty"`
	CallbackData string `json:"callback_data,omitempty"`
}

// render returns the plain text and inline keyboard of msg. The text is
// msg.Text, then one line per attachment, then the card rendered as text
// (title, blocks) and each select's placeholder; buttons, then one
// button per option of each select (channels.SelectButtons), become an
// inline keyboard with one button per row. A text over maxTextLength characters, an empty text or a callback
// value over maxCallbackData bytes is an error: the message is not
// truncated or split.
func render(msg *channels.OutboundMessage) (string, *inlineKeyboard, error) {
	var parts []string
	if strings.TrimSpace(msg.Text) != "" {
		parts = append(parts, msg.Text)
	}
	if links := channels.AttachmentLines(msg.Attachments); len(links) > 0 {
		parts = append(parts, strings.Join(links, "\n"))
	}
	var keyboard *inlineKeyboard
	if rc := msg.RichContent; rc != nil {
		if s := channels.CardText(rc); s != "" {
			parts = append(parts, s)
		}
		for _, sel := range rc.Selects {
			if sel.Placeholder != "" {
				parts = append(parts, sel.Placeholder)
			}
		}
		var err error
		if keyboard, err = buttons(channels.SelectButtons(rc)); err != nil {
			return "", nil, err
		}
	}
	text := strings.Join(parts, "\n\n")
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "":
		return "", nil, errors.New("empty message: no text, rich content or attachments")
	case n > maxTextLength:
		return "", nil, fmt.Errorf("text is %d characters, Telegram allows %d", n, maxTextLength)
	}
	return text, keyboard, nil
}

// buttons builds the inline keyboard; a callback button's data is its
// action id and value (envelope.RichButton.CallbackData), which Telegram
// limits to 64 bytes: a longer one is an error naming the limit.
func buttons(in []envelope.RichButton) (*inlineKeyboard, error) {
	if len(in) == 0 {
		return nil, nil
	}
	kb := &inlineKeyboard{}
	for i, b := range in {
		if b.Label == "" {
			return nil, fmt.Errorf("button %d has no label", i)
		}
		btn := inlineButton{Text: b.Label}
		if b.URL != "" {
			btn.URL = b.URL
		} else {
			btn.CallbackData = b.CallbackData()
			if len(btn.CallbackData) > maxCallbackData {
				return nil, fmt.Errorf("button %d: action_id and value make %d bytes of callback_data, Telegram allows %d", i, len(btn.CallbackData), maxCallbackData)
			}
		}
		kb.InlineKeyboard = append(kb.InlineKeyboard, []inlineButton{btn})
	}
	return kb, nil
}
