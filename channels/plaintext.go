package channels

import (
	"strings"
	"unicode/utf8"

	"github.com/miohq/mio/envelope"
)

// CardText renders a card's title and blocks as plain text (see
// BlocksText), separated by blank lines. Buttons are left to the adapter:
// each platform shows them its own way.
func CardText(rc *envelope.RichContent) string {
	var parts []string
	if t := strings.TrimSpace(rc.Title); t != "" {
		parts = append(parts, t)
	}
	if s := BlocksText(rc.Blocks); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n\n")
}

// BlocksText renders card blocks as plain text, separated by blank lines:
// lists as "• item" lines, tables as "a | b" rows, images as their alt
// text and URL, text, labels and unknown types as their text. Blocks that
// render blank are left out.
func BlocksText(blocks []envelope.RichBlock) string {
	var parts []string
	for _, b := range blocks {
		var s string
		switch b.Type {
		case envelope.BlockList:
			lines := make([]string, 0, len(b.Items))
			for _, item := range b.Items {
				lines = append(lines, "• "+item)
			}
			s = strings.Join(lines, "\n")
		case envelope.BlockTable:
			lines := make([]string, 0, len(b.Rows))
			for _, r := range b.Rows {
				lines = append(lines, strings.Join(r, " | "))
			}
			s = strings.Join(lines, "\n")
		case envelope.BlockImage:
			s = strings.TrimSpace(b.Alt + " " + b.URL)
		default:
			s = b.Text
		}
		if strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

// AttachmentLines renders URL attachments as text lines, "name: url" or
// the bare URL, for platforms that send attachments as links. Attachments
// without a URL are left out.
func AttachmentLines(atts []envelope.SendAttachment) []string {
	var lines []string
	for _, a := range atts {
		switch {
		case a.URL == "":
		case a.Name != "":
			lines = append(lines, a.Name+": "+a.URL)
		default:
			lines = append(lines, a.URL)
		}
	}
	return lines
}

// AlignedTable lays rows out in columns padded to their widest cell
// (counted in runes) and joined by " | ", with a "-+-" rule under the first
// (header) row; trailing spaces are trimmed. Short rows are padded with
// empty cells. For monospaced code blocks.
func AlignedTable(rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	var widths []int
	for _, r := range rows {
		for i, cell := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	line := func(r []string) string {
		cells := make([]string, len(widths))
		for i := range widths {
			cell := ""
			if i < len(r) {
				cell = r[i]
			}
			cells[i] = cell + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
		}
		return strings.TrimRight(strings.Join(cells, " | "), " ")
	}
	lines := []string{line(rows[0])}
	if len(rows) > 1 {
		rules := make([]string, len(widths))
		for i, w := range widths {
			rules[i] = strings.Repeat("-", w)
		}
		lines = append(lines, strings.Join(rules, "-+-"))
		for _, r := range rows[1:] {
			lines = append(lines, line(r))
		}
	}
	return strings.Join(lines, "\n")
}

// Truncate shortens s to at most n runes (n ≥ 1), ending with "…" when
// it cuts.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// SelectButtons returns rc's buttons followed by one callback button per
// option of each select (envelope.RichSelect.Button), for platforms that
// render a select menu as buttons.
func SelectButtons(rc *envelope.RichContent) []envelope.RichButton {
	if len(rc.Selects) == 0 {
		return rc.Buttons
	}
	out := append([]envelope.RichButton(nil), rc.Buttons...)
	for _, s := range rc.Selects {
		for _, o := range s.Options {
			out = append(out, s.Button(o))
		}
	}
	return out
}

// SelectsText lists selects as text for platforms without menus: per
// select its placeholder (else its action id), then one "• label" line
// per option.
func SelectsText(selects []envelope.RichSelect) string {
	var parts []string
	for _, s := range selects {
		head := s.Placeholder
		if head == "" {
			head = s.ActionID
		}
		lines := []string{head + ":"}
		for _, o := range s.Options {
			lines = append(lines, "• "+o.Label)
		}
		parts = append(parts, strings.Join(lines, "\n"))
	}
	return strings.Join(parts, "\n\n")
}
