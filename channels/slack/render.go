package slack

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Block Kit limits (https://api.slack.com/reference/block-kit).
const (
	maxBlocks          = 50
	maxSectionText     = 3000
	maxHeaderText      = 150
	maxButtonText      = 75
	maxButtonValue     = 2000
	maxButtonURL       = 3000
	maxActionsElements = 25
	maxActionID        = 255
	maxAltText         = 2000
)

// Block Kit objects MIO sends.
type (
	textObject struct {
		Type string `json:"type"` // plain_text or mrkdwn
		Text string `json:"text"`
	}
	headerBlock struct {
		Type string     `json:"type"` // header
		Text textObject `json:"text"`
	}
	sectionBlock struct {
		Type string     `json:"type"` // section
		Text textObject `json:"text"`
	}
	contextBlock struct {
		Type     string       `json:"type"` // context
		Elements []textObject `json:"elements"`
	}
	imageBlock struct {
		Type     string `json:"type"` // image
		ImageURL string `json:"image_url"`
		AltText  string `json:"alt_text"`
	}
	actionsBlock struct {
		Type     string `json:"type"`     // actions
		Elements []any  `json:"elements"` // buttonObject, staticSelect
	}
	staticSelect struct {
		Type        string         `json:"type"` // static_select
		ActionID    string         `json:"action_id"`
		Placeholder textObject     `json:"placeholder"`
		Options     []optionObject `json:"options"`
	}
	optionObject struct {
		Text  textObject `json:"text"`
		Value string     `json:"value"`
	}
	buttonObject struct {
		Type     string     `json:"type"` // button
		Text     textObject `json:"text"`
		ActionID string     `json:"action_id"`
		URL      string     `json:"url,omitempty"`
		Value    string     `json:"value,omitempty"`
		Style    string     `json:"style,omitempty"`
	}
)

// mrkdwnEscaper escapes the three characters Slack's mrkdwn reserves.
var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// render returns the text and blocks of msg. Text is msg.Text with one
// link line per attachment; it is passed through as mrkdwn (agents may use
// Slack markup such as mentions). With rich content, blocks hold that text
// as sections followed by the card, and text stays the notification
// fallback (the card rendered as plain text when msg.Text is empty). Rich
// content is portable, so its text is escaped. Oversized titles, labels
// and alt texts are truncated; what cannot be shortened without changing
// meaning (button values and URLs, too many blocks) is an error.
func render(msg *channels.OutboundMessage) (string, []any, error) {
	body := withAttachments(msg.Text, msg.Attachments)
	rc := msg.RichContent
	if isEmptyRich(rc) {
		if strings.TrimSpace(body) == "" {
			return "", nil, errors.New("empty message: no text, rich content or attachments")
		}
		return body, nil, nil
	}
	var blocks []any
	if strings.TrimSpace(body) != "" {
		for _, chunk := range splitRunes(body, maxSectionText) {
			blocks = append(blocks, section(chunk))
		}
	}
	card, err := cardBlocks(rc)
	if err != nil {
		return "", nil, err
	}
	blocks = append(blocks, card...)
	if len(blocks) > maxBlocks {
		return "", nil, fmt.Errorf("rich content renders to %d blocks, Slack allows %d", len(blocks), maxBlocks)
	}
	text := body
	if strings.TrimSpace(text) == "" {
		text = mrkdwnEscaper.Replace(fallbackText(rc))
	}
	return text, blocks, nil
}

// cardBlocks renders a card: a header for the title, a section per text,
// list and table block (tables as a monospaced mrkdwn code block), a
// context block per label, an image block per image, actions blocks
// for the buttons and one actions block per select.
func cardBlocks(rc *envelope.RichContent) ([]any, error) {
	var out []any
	if t := strings.TrimSpace(rc.Title); t != "" {
		out = append(out, headerBlock{Type: "header", Text: textObject{Type: "plain_text", Text: channels.Truncate(t, maxHeaderText)}})
	}
	for _, b := range rc.Blocks {
		switch b.Type {
		case envelope.BlockLabel:
			if b.Text != "" {
				out = append(out, contextBlock{Type: "context", Elements: []textObject{{Type: "mrkdwn", Text: channels.Truncate(mrkdwnEscaper.Replace(b.Text), maxSectionText)}}})
			}
		case envelope.BlockImage:
			if b.URL != "" {
				alt := b.Alt
				if alt == "" {
					alt = "image"
				}
				out = append(out, imageBlock{Type: "image", ImageURL: b.URL, AltText: channels.Truncate(alt, maxAltText)})
			}
		default:
			s := blockMrkdwn(b)
			for _, chunk := range splitRunes(s, maxSectionText) {
				out = append(out, section(chunk))
			}
		}
	}
	var row []any
	actionIDs := make(map[string]bool, len(rc.Buttons))
	for i, btn := range rc.Buttons {
		if btn.Label == "" {
			return nil, fmt.Errorf("button %d has no label", i)
		}
		b := buttonObject{
			Type:     "button",
			Text:     textObject{Type: "plain_text", Text: channels.Truncate(btn.Label, maxButtonText)},
			ActionID: fmt.Sprintf("mio_button_%d", i),
			Style:    buttonStyle(btn.Style),
		}
		if btn.ActionID != "" {
			if actionIDs[btn.ActionID] {
				return nil, fmt.Errorf("button %d: action_id %q repeats: Slack needs the action ids of a message unique (tell buttons apart by action_id, not only by value)", i, btn.ActionID)
			}
			actionIDs[btn.ActionID] = true
			b.ActionID = channels.Truncate(btn.ActionID, maxActionID)
		}
		if btn.URL != "" {
			if utf8.RuneCountInString(btn.URL) > maxButtonURL {
				return nil, fmt.Errorf("button %d: url longer than %d characters", i, maxButtonURL)
			}
			b.URL = btn.URL
		} else {
			b.Value = buttonValue(btn)
			if utf8.RuneCountInString(b.Value) > maxButtonValue {
				return nil, fmt.Errorf("button %d: value longer than %d characters", i, maxButtonValue)
			}
		}
		row = append(row, b)
		if len(row) == maxActionsElements {
			out = append(out, actionsBlock{Type: "actions", Elements: row})
			row = nil
		}
	}
	if len(row) > 0 {
		out = append(out, actionsBlock{Type: "actions", Elements: row})
	}
	for i, sel := range rc.Selects {
		if actionIDs[sel.ActionID] {
			return nil, fmt.Errorf("select %d: action_id %q repeats: Slack needs the action ids of a message unique", i, sel.ActionID)
		}
		actionIDs[sel.ActionID] = true
		out = append(out, actionsBlock{Type: "actions", Elements: []any{staticSelectOf(sel)}})
	}
	return out, nil
}

// DefaultPlaceholder is a select's placeholder when the agent gives none.
const DefaultPlaceholder = "Choose…"

// staticSelectOf renders a select as a static_select: the choice comes
// back in block_actions as selected_option (interact.go).
func staticSelectOf(sel envelope.RichSelect) staticSelect {
	ph := sel.Placeholder
	if ph == "" {
		ph = DefaultPlaceholder
	}
	out := staticSelect{Type: "static_select", ActionID: sel.ActionID,
		Placeholder: textObject{Type: "plain_text", Text: channels.Truncate(ph, maxButtonText)}}
	for _, o := range sel.Options {
		out.Options = append(out.Options, optionObject{Text: textObject{Type: "plain_text", Text: channels.Truncate(o.Label, maxButtonText)}, Value: o.Value})
	}
	return out
}

// blockMrkdwn renders a text, list or table block (and the text of an
// unknown block type) as escaped mrkdwn.
func blockMrkdwn(b envelope.RichBlock) string {
	switch b.Type {
	case envelope.BlockList:
		lines := make([]string, 0, len(b.Items))
		for _, item := range b.Items {
			lines = append(lines, "• "+mrkdwnEscaper.Replace(item))
		}
		return strings.Join(lines, "\n")
	case envelope.BlockTable:
		if len(b.Rows) == 0 {
			return ""
		}
		return "```\n" + mrkdwnEscaper.Replace(channels.AlignedTable(b.Rows)) + "\n```"
	}
	return mrkdwnEscaper.Replace(b.Text)
}

func section(text string) sectionBlock {
	return sectionBlock{Type: "section", Text: textObject{Type: "mrkdwn", Text: text}}
}

// buttonStyle maps a RichButton style to Block Kit's (primary, danger;
// anything else is the default button).
func buttonStyle(s string) string {
	if s == envelope.ButtonPrimary || s == envelope.ButtonDanger {
		return s
	}
	return ""
}

// buttonValue is a callback button's value, defaulting to its label.
func buttonValue(b envelope.RichButton) string {
	if b.Value != "" {
		return b.Value
	}
	return b.Label
}

// withAttachments appends one Slack link per attachment to text.
func withAttachments(text string, atts []envelope.SendAttachment) string {
	lines := []string{}
	if text != "" {
		lines = append(lines, text)
	}
	for _, a := range atts {
		if a.URL == "" {
			continue
		}
		if a.Name != "" {
			lines = append(lines, "<"+a.URL+"|"+mrkdwnEscaper.Replace(a.Name)+">")
		} else {
			lines = append(lines, "<"+a.URL+">")
		}
	}
	return strings.Join(lines, "\n")
}

func isEmptyRich(rc *envelope.RichContent) bool {
	return rc == nil || (strings.TrimSpace(rc.Title) == "" && len(rc.Blocks) == 0 && len(rc.Buttons) == 0 && len(rc.Selects) == 0)
}

// fallbackText renders a card as plain text (Slack's notification
// fallback): the title and blocks (channels.CardText), else the button
// labels.
func fallbackText(rc *envelope.RichContent) string {
	if s := channels.CardText(rc); s != "" {
		return s
	}
	labels := make([]string, 0, len(rc.Buttons))
	for _, b := range rc.Buttons {
		labels = append(labels, b.Label)
	}
	return strings.Join(labels, "\n\n")
}

// splitRunes cuts s into chunks of at most n runes.
func splitRunes(s string, n int) []string {
	if s == "" {
		return nil
	}
	r := []rune(s)
	var out []string
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return append(out, string(r))
}
