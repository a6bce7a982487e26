package discord

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Discord message limits.
const (
	maxContentLength    = 2000 // characters of content
	maxEmbeds           = 10
	maxEmbedTitle       = 256
	maxEmbedDescription = 4096
	maxButtons          = 25 // 5 action rows of 5 buttons
	maxButtonsPerRow    = 5
	maxButtonLabel      = 80
	maxCustomID         = 100
	maxButtonURL        = 512
	componentActionRow  = 1
	componentButton     = 2
	componentStringSel  = 3
	maxActionRows       = 5
	buttonStylePrimary  = 1
	buttonStyleDanger   = 4
	buttonStyleLink     = 5
)

type embed struct {
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description,omitempty"`
	Image       *embedImage `json:"image,omitempty"`
}

type embedImage struct {
	URL string `json:"url"`
}

type actionRow struct {
	Type       int            `json:"type"` // componentActionRow
	Components []buttonObject `json:"components"`
}

// buttonObject is a button (componentButton) or a string select
// (componentStringSel: custom_id, placeholder and options).
type buttonObject struct {
	Type        int            `json:"type"`
	Style       int            `json:"style,omitempty"`
	Label       string         `json:"label,omitempty"`
	URL         string         `json:"url,omitempty"`
	CustomID    string         `json:"custom_id,omitempty"`
	Placeholder string         `json:"placeholder,omitempty"`
	Options     []selectOption `json:"options,omitempty"`
}

type selectOption struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// render returns the content, embeds and components of msg. Content is
// msg.Text with one line per attachment URL (Discord previews links); it is
// not truncated: over maxContentLength characters is an error. A card
// becomes one embed (title; text, list, table and label blocks in the
// description; the first image) plus one embed per further image, and its
// buttons become action rows: link buttons (style 5) for URL buttons,
// primary (or, styled so, danger) buttons whose custom_id is the action
// id and value (envelope.RichButton.CallbackData) for the others; each
// select is an action row holding a string select.
func render(msg *channels.OutboundMessage) (string, []embed, []actionRow, error) {
	content := msg.Text
	for _, a := range msg.Attachments {
		if a.URL != "" {
			content = strings.TrimLeft(content+"\n"+a.URL, "\n")
		}
	}
	if n := utf8.RuneCountInString(content); n > maxContentLength {
		return "", nil, nil, fmt.Errorf("content is %d characters, Discord allows %d", n, maxContentLength)
	}
	var embeds []embed
	var rows []actionRow
	if rc := msg.RichContent; rc != nil {
		var err error
		if embeds, err = cardEmbeds(rc); err != nil {
			return "", nil, nil, err
		}
		if rows, err = buttonRows(rc.Buttons); err != nil {
			return "", nil, nil, err
		}
		ids := map[string]bool{}
		for _, r := range rows {
			for _, c := range r.Components {
				ids[c.CustomID] = true
			}
		}
		for i, sel := range rc.Selects {
			if ids[sel.ActionID] {
				return "", nil, nil, fmt.Errorf("select %d: action_id %q is another component's custom_id", i, sel.ActionID)
			}
			ids[sel.ActionID] = true
			rows = append(rows, selectRow(sel))
		}
		if len(rows) > maxActionRows {
			return "", nil, nil, fmt.Errorf("%d action rows of buttons and selects, Discord allows %d", len(rows), maxActionRows)
		}
	}
	if strings.TrimSpace(content) == "" && len(embeds) == 0 {
		return "", nil, nil, errors.New("empty message: no text, rich content or attachments")
	}
	return content, embeds, rows, nil
}

// cardEmbeds renders a card's title and blocks as embeds.
func cardEmbeds(rc *envelope.RichContent) ([]embed, error) {
	main := embed{Title: channels.Truncate(strings.TrimSpace(rc.Title), maxEmbedTitle)}
	var parts []string
	var images []string
	for _, b := range rc.Blocks {
		var s string
		switch b.Type {
		case envelope.BlockImage:
			if b.URL != "" {
				images = append(images, b.URL)
			}
			continue
		case envelope.BlockList:
			lines := make([]string, 0, len(b.Items))
			for _, item := range b.Items {
				lines = append(lines, "• "+item)
			}
			s = strings.Join(lines, "\n")
		case envelope.BlockTable:
			if len(b.Rows) > 0 {
				s = "```\n" + channels.AlignedTable(b.Rows) + "\n```"
			}
		case envelope.BlockLabel:
			if b.Text != "" {
				s = "*" + b.Text + "*"
			}
		default:
			s = b.Text
		}
		if strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	main.Description = strings.Join(parts, "\n\n")
	if n := utf8.RuneCountInString(main.Description); n > maxEmbedDescription {
		return nil, fmt.Errorf("card text is %d characters, a Discord embed allows %d", n, maxEmbedDescription)
	}
	var out []embed
	if len(images) > 0 {
		main.Image = &embedImage{URL: images[0]}
		images = images[1:]
	}
	if main.Title != "" || main.Description != "" || main.Image != nil {
		out = append(out, main)
	}
	for _, u := range images {
		out = append(out, embed{Image: &embedImage{URL: u}})
	}
	if len(out) > maxEmbeds {
		return nil, fmt.Errorf("card renders to %d embeds, Discord allows %d", len(out), maxEmbeds)
	}
	return out, nil
}

// selectRow is the action row of a string select: its custom_id is the
// select's action id; the interaction reports the chosen option in
// values.
func selectRow(s envelope.RichSelect) actionRow {
	sel := buttonObject{Type: componentStringSel, CustomID: s.ActionID, Placeholder: s.Placeholder}
	for _, o := range s.Options {
		sel.Options = append(sel.Options, selectOption{Label: o.Label, Value: o.Value})
	}
	return actionRow{Type: componentActionRow, Components: []buttonObject{sel}}
}

// buttonRows lays buttons out in action rows of maxButtonsPerRow.
func buttonRows(in []envelope.RichButton) ([]actionRow, error) {
	if len(in) > maxButtons {
		return nil, fmt.Errorf("%d buttons, Discord allows %d", len(in), maxButtons)
	}
	var rows []actionRow
	seen := map[string]bool{}
	for i, b := range in {
		if b.Label == "" {
			return nil, fmt.Errorf("button %d has no label", i)
		}
		btn := buttonObject{Type: componentButton, Label: channels.Truncate(b.Label, maxButtonLabel)}
		if b.URL != "" {
			if len(b.URL) > maxButtonURL {
				return nil, fmt.Errorf("button %d: url longer than %d characters", i, maxButtonURL)
			}
			btn.Style, btn.URL = buttonStyleLink, b.URL
		} else {
			id := b.CallbackData()
			switch {
			case utf8.RuneCountInString(id) > maxCustomID:
				return nil, fmt.Errorf("button %d: action_id and value make a custom_id longer than %d characters", i, maxCustomID)
			case seen[id]:
				return nil, fmt.Errorf("button %d: action_id and value %q are not unique", i, id)
			}
			seen[id] = true
			btn.Style, btn.CustomID = buttonStylePrimary, id
			if b.Style == envelope.ButtonDanger {
				btn.Style = buttonStyleDanger
			}
		}
		if i%maxButtonsPerRow == 0 {
			rows = append(rows, actionRow{Type: componentActionRow})
		}
		rows[len(rows)-1].Components = append(rows[len(rows)-1].Components, btn)
	}
	return rows, nil
}
