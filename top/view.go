package top

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// The views, in the order keys 1 to 5 choose them.
const (
	viewConsumers = iota
	viewQueues
	viewRates
	viewDead
	viewTail
	numViews
)

var viewNames = [numViews]string{"Consumers", "Queues", "Rates", "Dead letters", "Tail"}

// maxTail is how many tailed messages are kept.
const maxTail = 500

// Default terminal size until the terminal reports its own.
const (
	defaultWidth  = 80
	defaultHeight = 24
)

// screen is what the terminal view shows; render draws it.
type screen struct {
	url      string
	interval time.Duration
	width    int
	height   int
	view     int
	scroll   [numViews]int
	// tenant is the tenant shown (its id); "" every tenant.
	tenant string
	// snap is the latest snapshot read (nil before the first); err the
	// latest refresh's error, nil when it succeeded.
	snap  *Snapshot
	err   error
	rates *Rates
	// tail holds the tailed messages, newest first; tailState each tailed
	// tenant's stream: "connecting", "live" or its error.
	tail      []TailMessage
	tailState map[string]string
	// prompt is the tenant being typed after '/'; nil when not typing.
	prompt *string
}

var (
	styleTab    = lipgloss.NewStyle().Reverse(true).Bold(true)
	styleHeader = lipgloss.NewStyle().Bold(true)
	styleError  = lipgloss.NewStyle().Foreground(lipgloss.Color("9")).Bold(true)
	styleHelp   = lipgloss.NewStyle().Faint(true)
)

const helpLine = "1-5/tab view  t tenant  / type tenant  ↑↓ scroll  r refresh  q quit"

// render draws the screen: the view tabs, a status line, the view's
// header and rows, and the keys; every line fits the width, and there are
// never more lines than the height.
func (s *screen) render() string {
	w, h := s.width, s.height
	if w <= 0 || h <= 0 {
		w, h = defaultWidth, defaultHeight
	}
	var tabs []string
	for i, name := range viewNames {
		label := fmt.Sprintf(" %d %s ", i+1, name)
		if i == s.view {
			label = styleTab.Render(fmt.Sprintf("[%d %s]", i+1, name))
		}
		tabs = append(tabs, label)
	}
	lines := []string{fit(" mio top ", 9) + ansi.Truncate(strings.Join(tabs, ""), w-9, "…")}
	lines = append(lines, s.statusLine(w))

	header, rows := s.viewRows(w)
	lines = append(lines, styleHeader.Render(fit(header, w)))
	room := max(h-len(lines)-1, 1)
	first := min(s.scroll[s.view], max(len(rows)-room, 0))
	shown := rows[first:]
	if len(shown) > room {
		shown = shown[:room-1]
		shown = append(shown, fit(fmt.Sprintf("… %d more lines (↑↓ to scroll)", len(rows)-first-len(shown)), w))
	}
	lines = append(lines, shown...)
	for len(lines) < h-1 {
		lines = append(lines, "")
	}
	if s.prompt != nil {
		lines = append(lines, fit("tenant (name or id; empty: all): "+*s.prompt+"█  enter ok, esc cancel", w))
	} else {
		lines = append(lines, styleHelp.Render(fit(helpLine, w)))
	}
	if len(lines) > h {
		lines = lines[len(lines)-h:]
	}
	return strings.Join(lines, "\n")
}

// statusLine names the tenant shown, the refresh and the tail's state,
// or the last refresh's error.
func (s *screen) statusLine(w int) string {
	tenant := "all"
	if s.tenant != "" {
		tenant = s.snap.tenantName(s.tenant)
	}
	if s.err != nil {
		return styleError.Render(fit("! "+oneLine(s.err.Error()), w))
	}
	refreshed := "reading…"
	if s.snap != nil {
		refreshed = s.snap.At.Format("15:04:05")
	}
	return fit(fmt.Sprintf("tenant %s · %s every %s · tail %s · %s", tenant, refreshed, s.interval, s.tailSummary(), s.url), w)
}

// tailSummary is the tailed streams' state in a word or two.
func (s *screen) tailSummary() string {
	live, other := 0, ""
	for _, st := range s.tailState {
		if st == "live" {
			live++
		} else if other == "" || st != "connecting" {
			other = st
		}
	}
	if len(s.tailState) == 0 {
		return "off"
	}
	state := other
	if live == len(s.tailState) {
		state = "live"
	}
	if s.tenant == "" && s.snap != nil && len(s.snap.Tenants) > len(s.tailState) {
		state += fmt.Sprintf(" (%d of %d tenants)", len(s.tailState), len(s.snap.Tenants))
	}
	return state
}

// viewRows is the current view's header and rows, each fitted to w.
func (s *screen) viewRows(w int) (string, []string) {
	if s.snap == nil && s.view != viewTail {
		return "", []string{"reading " + s.url + " …"}
	}
	switch s.view {
	case viewConsumers:
		return s.consumerRows(w)
	case viewQueues:
		return s.queueRows(w)
	case viewRates:
		return s.rateRows(w)
	case viewDead:
		return s.deadRows(w)
	}
	return s.tailRows(w)
}

func (s *screen) consumerRows(w int) (string, []string) {
	t := table{width: w, cols: []column{{"TENANT", 12, false}, {"CONSUMER", 0, false}, {"PENDING", 9, true},
		{"ACK PEND", 8, true}, {"REDELIV", 7, true}, {"DEAD", 6, true}, {"OLDEST", 7, true}}}
	var rows []string
	for _, c := range s.snap.Consumers {
		rows = append(rows, t.row(s.snap.tenantName(c.TenantID), c.Name, num(c.Pending), num(c.AckPending),
			num(c.Redelivered), num(c.Dead), age(c.OldestPendingAge)))
	}
	if len(rows) == 0 {
		rows = []string{"no consumers"}
	}
	return t.header(), rows
}

func (s *screen) queueRows(w int) (string, []string) {
	t := table{width: w, cols: []column{{"RIVER QUEUE", 0, false}, {"AVAILABLE", 10, true}, {"RUNNING", 8, true},
		{"RETRYABLE", 10, true}, {"OLDEST", 8, true}}}
	var rows []string
	for _, q := range s.snap.Queues {
		rows = append(rows, t.row(q.Name, num(q.Available), num(q.Running), num(q.Retryable), age(q.OldestAvailableAge)))
	}
	if len(rows) == 0 {
		rows = []string{"no River jobs available, running or to retry"}
	}
	return t.header(), rows
}

func (s *screen) rateRows(w int) (string, []string) {
	t := table{width: w, cols: []column{{"CHANNEL", 10, false}, {"", 3, false}, {"NOW/S", 7, true}, {"PEAK/S", 7, true},
		{"last 5 min (this process, all tenants)", 0, false}}}
	cols := max(t.flexWidth(), 1)
	var rows []string
	for _, ch := range s.rates.Channels() {
		latest, ok := s.rates.Latest(ch)
		for _, dir := range []struct {
			name string
			pick func(Counts) float64
		}{{"in", func(c Counts) float64 { return c.Received }}, {"out", func(c Counts) float64 { return c.Sent }}} {
			line, peak := sparkline(s.rates.Series(ch, dir.pick, cols))
			now := "–"
			if ok {
				now = rate(dir.pick(latest))
			}
			name := ch
			if dir.name == "out" {
				name = ""
			}
			rows = append(rows, t.row(name, dir.name, now, rate(peak), line))
		}
	}
	if len(rows) == 0 {
		rows = []string{"no messages counted yet (a channel appears with its first message)"}
	}
	return t.header(), rows
}

// deadRows shows each dead letter on two lines: what and where, then its
// last error, which is what an operator reads it for.
func (s *screen) deadRows(w int) (string, []string) {
	t := table{width: w, cols: []column{{"AGE", 6, true}, {"KIND", 8, false}, {"CHANNEL", 9, false}, {"TENANT", 10, false},
		{"ATT", 3, true}, {"ID / LAST ERROR", 0, false}}}
	var rows []string
	for _, d := range s.snap.Dead {
		at := d.CreatedAt
		if d.DeadAt != nil {
			at = *d.DeadAt
		}
		rows = append(rows, t.row(age(s.snap.At.Sub(at)), d.Kind, d.ChannelType, s.snap.tenantName(d.TenantID),
			strconv.Itoa(d.Attempts), d.ID), fit("       "+oneLine(d.LastError), w))
	}
	if len(rows) == 0 {
		rows = []string{"no dead letters"}
	}
	return t.header(), rows
}

func (s *screen) tailRows(w int) (string, []string) {
	t := table{width: w, cols: []column{{"TIME", 8, false}, {"TENANT", 10, false}, {"CHANNEL", 8, false},
		{"CONVERSATION", 16, false}, {"TEXT", 0, false}}}
	var rows []string
	for _, m := range s.tail {
		rows = append(rows, t.row(m.ReceivedAt.Local().Format("15:04:05"), s.snap.tenantName(m.TenantID), m.ChannelType,
			m.ConversationID, m.Text))
	}
	if len(rows) == 0 {
		rows = []string{"inbound messages appear here as they arrive (tail " + s.tailSummary() + ")"}
	}
	return t.header(), rows
}

// table lays out columns in a width: one flexible column (width 0) takes
// what the others leave; columns are one space apart.
type table struct {
	width int
	cols  []column
}

type column struct {
	title string
	width int
	right bool
}

func (t table) flexWidth() int {
	used := len(t.cols) - 1
	for _, c := range t.cols {
		used += c.width
	}
	return max(t.width-used, 4)
}

func (t table) header() string {
	titles := make([]string, len(t.cols))
	for i, c := range t.cols {
		titles[i] = c.title
	}
	return t.row(titles...)
}

// row formats one row, each cell on one line, cut to its column.
func (t table) row(cells ...string) string {
	var b strings.Builder
	for i, c := range t.cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		w := c.width
		if w == 0 {
			w = t.flexWidth()
		}
		cell := oneLine(cells[i])
		if c.right {
			cell = ansi.Truncate(cell, w, "…")
			cell = strings.Repeat(" ", w-ansi.StringWidth(cell)) + cell
		} else if i < len(t.cols)-1 {
			cell = fit(cell, w)
		} else {
			cell = ansi.Truncate(cell, w, "…")
		}
		b.WriteString(cell)
	}
	return ansi.Truncate(strings.TrimRight(b.String(), " "), t.width, "…")
}

// fit cuts s to w cells (ending in … when cut) and pads it to w.
func fit(s string, w int) string {
	s = ansi.Truncate(s, w, "…")
	return s + strings.Repeat(" ", max(w-ansi.StringWidth(s), 0))
}

// oneLine makes untrusted text safe for one terminal line: control
// characters (escape sequences, newlines) become spaces, runs of spaces
// one.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

func num(n int64) string { return strconv.FormatInt(n, 10) }

// rate is a per-second rate in at most 7 cells.
func rate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v < 1e6:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
}

// age is a duration in at most 6 cells: 42s, 4m05s, 2h13m, 3d04h; "-" for
// none.
func age(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}
