package zohocliq

import (
	"errors"
	"fmt"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// cardTheme is the Cliq message card theme MIO uses.
const cardTheme = "modern-inline"

// messageCard is a Cliq message card header.
type messageCard struct {
	Title string `json:"title,omitempty"`
	Theme string `json:"theme"`
}

// messageSlide is one Cliq card slide: text (data a string), list (data
// a list of strings), table (data {headers, rows}) or images (data a list
// of URLs).
type messageSlide struct {
	Type  string `json:"type"`
	Title string `json:"title,omitempty"`
	Data  any    `json:"data"`
}

type slideTable struct {
	Headers []string            `json:"headers"`
	Rows    []map[string]string `json:"rows"`
}

// messageBtn is a Cliq card button; MIO only sends open.url buttons.
type messageBtn struct {
	Label  string    `json:"label"`
	Action btnAction `json:"action"`
}

type btnAction struct {
	Type string  `json:"type"` // open.url
	Data btnData `json:"data"`
}

type btnData struct {
	Web string `json:"web"`
}

// render builds the post-message body of msg. Text is msg.Text with one
// line per attachment URL; without text it is the card's title (or the
// card as plain text when it has none). A
// card becomes card {title, theme}, one slide per block (labels as text
// slides, images as images slides) and open.url buttons. Cliq callback
// buttons need a Deluge function, which a portable card cannot name, so
// callback buttons are listed in the text as "[label]" instead, and
// selects as their choices (channels.SelectsText).
func render(msg *channels.OutboundMessage) (*postMessage, error) {
	var parts []string
	if strings.TrimSpace(msg.Text) != "" {
		parts = append(parts, msg.Text)
	}
	parts = append(parts, channels.AttachmentLines(msg.Attachments)...)
	body := &postMessage{}
	if rc := msg.RichContent; rc != nil && (strings.TrimSpace(rc.Title) != "" || len(rc.Blocks) > 0 || len(rc.Buttons) > 0 || len(rc.Selects) > 0) {
		body.Card = &messageCard{Title: strings.TrimSpace(rc.Title), Theme: cardTheme}
		body.Slides = slides(rc.Blocks)
		if len(parts) == 0 {
			// Cliq needs a text; the card shows the rest.
			fallback := body.Card.Title
			if fallback == "" {
				fallback = channels.CardText(rc)
			}
			if fallback != "" {
				parts = append(parts, fallback)
			}
		}
		var callbacks []string
		for i, b := range rc.Buttons {
			switch {
			case b.Label == "":
				return nil, fmt.Errorf("button %d has no label", i)
			case b.URL != "":
				body.Buttons = append(body.Buttons, messageBtn{Label: b.Label, Action: btnAction{Type: "open.url", Data: btnData{Web: b.URL}}})
			default:
				callbacks = append(callbacks, "["+b.Label+"]")
			}
		}
		if len(callbacks) > 0 {
			parts = append(parts, strings.Join(callbacks, " "))
		}
		if lines := channels.SelectsText(rc.Selects); lines != "" {
			parts = append(parts, lines)
		}
	}
	body.Text = strings.Join(parts, "\n")
	if strings.TrimSpace(body.Text) == "" {
		return nil, errors.New("empty message: no text, rich content or attachments")
	}
	return body, nil
}

// slides renders card blocks as Cliq slides.
func slides(blocks []envelope.RichBlock) []messageSlide {
	var out []messageSlide
	for _, b := range blocks {
		switch b.Type {
		case envelope.BlockList:
			if len(b.Items) > 0 {
				out = append(out, messageSlide{Type: "list", Data: b.Items})
			}
		case envelope.BlockTable:
			if len(b.Rows) > 0 {
				out = append(out, messageSlide{Type: "table", Data: tableSlide(b.Rows)})
			}
		case envelope.BlockImage:
			if b.URL != "" {
				out = append(out, messageSlide{Type: "images", Title: b.Alt, Data: []string{b.URL}})
			}
		default: // text, label and unknown types with text
			if strings.TrimSpace(b.Text) != "" {
				out = append(out, messageSlide{Type: "text", Data: b.Text})
			}
		}
	}
	return out
}

// tableSlide turns rows (the first is the header) into a Cliq table slide,
// whose rows are objects keyed by header. Empty or repeated headers and
// columns beyond the header row are named "Column N" so no cell is lost.
func tableSlide(rows [][]string) slideTable {
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	t := slideTable{Headers: make([]string, width), Rows: []map[string]string{}}
	seen := map[string]bool{}
	for i := range width {
		h := ""
		if i < len(rows[0]) {
			h = strings.TrimSpace(rows[0][i])
		}
		if h == "" || seen[h] {
			h = fmt.Sprintf("Column %d", i+1)
		}
		seen[h] = true
		t.Headers[i] = h
	}
	for _, r := range rows[1:] {
		row := make(map[string]string, width)
		for i, h := range t.Headers {
			if i < len(r) {
				row[h] = r[i]
			} else {
				row[h] = ""
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
