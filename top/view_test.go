package top

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/stretchr/testify/require"
)

var at = time.Date(2026, 11, 28, 15, 4, 5, 0, time.UTC)

// fixture is a snapshot with more rows than fit and cells longer than
// their columns, some with control characters.
func fixture() *Snapshot {
	s := &Snapshot{At: at, Tenants: []Tenant{{ID: "0190aaaa-0000-7000-8000-000000000001", Name: "acme"},
		{ID: "0190bbbb-0000-7000-8000-000000000002", Name: "a tenant with a very long name"}},
		Counters: map[string]Counts{"slack": {Received: 120, Sent: 30}, "webhook": {Received: 7}}}
	for i := range 40 {
		s.Consumers = append(s.Consumers, Consumer{TenantID: s.Tenants[i%2].ID, Name: fmt.Sprintf("agent-%02d-with-a-long-consumer-name", i),
			Pending: int64(i * 7 % 13), AckPending: int64(i), OldestPendingAge: time.Duration(i) * time.Minute})
	}
	s.Queues = []Queue{{Name: "default", Available: 3, Running: 1}, {Name: "dispatch", Retryable: 2, OldestAvailableAge: 90 * time.Second}}
	dead := at.Add(-3 * time.Minute)
	for i := range 30 {
		s.Dead = append(s.Dead, DeadLetter{Kind: "outbound", TenantID: s.Tenants[0].ID, ID: fmt.Sprintf("0190cccc-0000-7000-8000-%012d", i),
			ChannelType: "slack", Attempts: 5, DeadAt: &dead,
			LastError: "slack: chat.postMessage: channel_not_found\n\x1b[31mand a second line that is far too long for any terminal"})
	}
	SortByBacklog(s.Consumers)
	return s
}

func testScreen(s *Snapshot) *screen {
	sc := &screen{url: "http://127.0.0.1:9090", interval: 2 * time.Second, width: 80, height: 24, snap: s,
		rates: NewRates(RateWindow), tailState: map[string]string{s.Tenants[0].ID: "live"}}
	// Slack over the last 5 minutes, read every 10 s: a saw tooth of 0 to
	// 4 messages a second; then webhook appears.
	var in float64
	for i := range 30 {
		in += float64(i%5) * 10
		sc.rates.Add(at.Add(time.Duration(i-30)*10*time.Second), map[string]Counts{"slack": {Received: in, Sent: 30}})
	}
	s.Counters["slack"] = Counts{Received: in + 20, Sent: 30}
	sc.rates.Add(at, s.Counters)
	for i := range 30 {
		sc.tail = append(sc.tail, TailMessage{TenantID: s.Tenants[1].ID, ChannelType: "telegram", ConversationID: "-100123456789012",
			ReceivedAt: at, Text: fmt.Sprintf("message %d: 你好 \x1b]0;owned\x07 a long text that runs past the right edge of the screen", i)})
	}
	return sc
}

// TestRenderFits80x24: every view of an 80×24 terminal is 24 lines of at
// most 80 cells, with no control characters from the data, and says how
// many rows it could not show.
func TestRenderFits80x24(t *testing.T) {
	t.Parallel()
	sc := testScreen(fixture())
	for v := range numViews {
		t.Run(viewNames[v], func(t *testing.T) {
			sc := *sc
			sc.view = v
			out := sc.render()
			lines := strings.Split(out, "\n")
			require.Len(t, lines, 24, out)
			for i, l := range lines {
				require.LessOrEqual(t, lipgloss.Width(l), 80, "line %d: %q", i, l)
				require.NotContains(t, l, "\x07", "line %d", i)
				require.NotContains(t, l, "\n", "line %d", i)
			}
			require.Contains(t, lines[0], fmt.Sprintf("[%d %s]", v+1, viewNames[v]))
			require.Contains(t, lines[23], "q quit")
			if v != viewQueues && v != viewRates {
				require.Contains(t, out, "more lines (↑↓ to scroll)")
			}
		})
	}
}

// TestRenderViews: what each view shows of the fixture.
func TestRenderViews(t *testing.T) {
	t.Parallel()
	sc := testScreen(fixture())
	show := func(v int) []string {
		sc.view = v
		return strings.Split(sc.render(), "\n")
	}

	lines := show(viewConsumers)
	require.Equal(t, "TENANT       CONSUMER                    PENDING ACK PEND REDELIV   DEAD  OLDEST", lines[2])
	require.Equal(t, "a tenant wi… agent-37-with-a-long-con…        12       37       0      0  37m00s", lines[3])
	require.Equal(t, "tenant all · 15:04:05 every 2s · tail live (1 of 2 tenants) · http://127.0.0.1:…", lines[1],
		"the tail follows the first tenants only; the URL comes last, cut")

	lines = show(viewQueues)
	require.Contains(t, lines[4], "dispatch")
	require.True(t, strings.HasSuffix(lines[4], "0        0          2    1m30s"), lines[4])

	lines = show(viewRates)
	require.Equal(t, "slack      in     2.00    4.00 ▃▄▅▆▇█▅▁▃▄▅▆▇█▆▁▃▃▅▆▇██▁▂▃▅▅▇██▂▂▃▄▅▇██▃▂▃▄▅▇▇█▆▅", lines[3])
	require.Equal(t, "           out       0       0 ▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁", lines[4])
	require.Equal(t, "webhook    in     0.70    0.70 ▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▆█", lines[5],
		"a channel first counted late was at zero before")

	lines = show(viewDead)
	require.Equal(t, " 3m00s outbound slack     acme         5 0190cccc-0000-7000-8000-000000000000", lines[3])
	require.Equal(t, "       slack: chat.postMessage: channel_not_found [31mand a second line that is…", lines[4])

	lines = show(viewTail)
	require.Equal(t, at.Local().Format("15:04:05")+" a tenant … telegram -100123456789012 message 0: 你好 ]0;owned a long t…", lines[3],
		"wide characters count two cells; control characters are gone")
}

// TestSortByBacklog: largest pending first, then the oldest pending,
// then tenant and name.
func TestSortByBacklog(t *testing.T) {
	t.Parallel()
	cs := []Consumer{
		{TenantID: "b", Name: "x", Pending: 1},
		{TenantID: "a", Name: "y", Pending: 0},
		{TenantID: "a", Name: "z", Pending: 50},
		{TenantID: "a", Name: "w", Pending: 1, OldestPendingAge: time.Hour},
		{TenantID: "a", Name: "v", Pending: 1},
	}
	SortByBacklog(cs)
	var got []string
	for _, c := range cs {
		got = append(got, c.TenantID+"/"+c.Name)
	}
	require.Equal(t, []string{"a/z", "a/w", "a/v", "b/x", "a/y"}, got)
}

// TestWritePlain: --once's output, tables without terminal control.
func TestWritePlain(t *testing.T) {
	t.Parallel()
	s := fixture()
	s.Consumers, s.Dead = s.Consumers[:2], s.Dead[:1]
	rates := NewRates(RateWindow)
	rates.Add(s.At, s.Counters)
	var b bytes.Buffer
	require.NoError(t, WritePlain(&b, "http://127.0.0.1:9090", s, rates))
	require.Equal(t, `mio top  http://127.0.0.1:9090  tenant all  2026-11-28T15:04:05Z

CONSUMERS
TENANT                          CONSUMER                            PENDING  ACK PENDING  REDELIVERED  DEAD  OLDEST PENDING
a tenant with a very long name  agent-37-with-a-long-consumer-name  12       37           0            0     37m00s
acme                            agent-24-with-a-long-consumer-name  12       24           0            0     24m00s

RIVER QUEUES
QUEUE     AVAILABLE  RUNNING  RETRYABLE  OLDEST AVAILABLE
default   3          1        0          -
dispatch  0          0        2          1m30s

CHANNELS (this process since it started, all tenants)
CHANNEL  RECEIVED  SENT  RECEIVED/S  SENT/S
slack    120       30    -           -
webhook  7         0     -           -

DEAD LETTERS (newest 50)
DEAD AT               KIND      TENANT  CHANNEL  ATTEMPTS  ID                                    LAST ERROR
2026-11-28T15:01:05Z  outbound  acme    slack    5         0190cccc-0000-7000-8000-000000000000  slack: chat.postMessage: channel_not_found [31mand a second line that is far too long for any terminal
`, b.String())
}

// TestRates: per-second rates between readings; a counter that went
// down restarted from zero; a channel first seen later counts from zero.
func TestRates(t *testing.T) {
	t.Parallel()
	r := NewRates(time.Minute)
	_, ok := r.Latest("slack")
	require.False(t, ok, "one reading is no rate")
	r.Add(at, map[string]Counts{"slack": {Received: 10}})
	r.Add(at.Add(2*time.Second), map[string]Counts{"slack": {Received: 20, Sent: 4}, "discord": {Received: 6}})
	got, ok := r.Latest("slack")
	require.True(t, ok)
	require.Equal(t, Counts{Received: 5, Sent: 2}, got)
	got, _ = r.Latest("discord")
	require.Equal(t, Counts{Received: 3}, got)
	r.Add(at.Add(4*time.Second), map[string]Counts{"slack": {Received: 4, Sent: 4}, "discord": {Received: 6}})
	got, _ = r.Latest("slack")
	require.Equal(t, Counts{Received: 2}, got, "restarted process: 4 since")
	require.Equal(t, []string{"discord", "slack"}, r.Channels())

	// Columns of 20 s over the minute before the last reading: only the
	// last holds the 4 s read, the mean of 5/s and 2/s.
	series := r.Series("slack", func(c Counts) float64 { return c.Received }, 3)
	require.Equal(t, []float64{-1, -1, 3.5}, series)
	line, peak := sparkline(series)
	require.Equal(t, "  █", line)
	require.Equal(t, 3.5, peak)

	r.Add(at.Add(2*time.Minute), map[string]Counts{"slack": {Received: 4, Sent: 4}})
	require.Equal(t, []float64{0, 0, 0}, r.Series("slack", func(c Counts) float64 { return c.Received }, 3),
		"spans older than the window dropped; a long quiet span covers every column")
}

// TestRefreshSchedule: a refresh asked for by a key schedules the next
// one itself, and the tick scheduled before it no longer counts (else
// each r would add a refresh every interval).
func TestRefreshSchedule(t *testing.T) {
	t.Parallel()
	s := fixture()
	m := newModel(t.Context(), NewClient("http://127.0.0.1:1", "mioadm_x"), Options{Interval: time.Second}, s)
	m.Init()
	m.Update(snapMsg{snap: s})
	require.Equal(t, 1, m.tick)
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("r")})
	require.NotNil(t, cmd, "r reads a snapshot")
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("r")})
	require.Nil(t, cmd, "one read at a time")
	m.Update(snapMsg{snap: s}) // the first r's read; the second r asks again
	require.True(t, m.fetching)
	m.Update(snapMsg{snap: s})
	require.False(t, m.fetching)
	_, cmd = m.Update(tickMsg{n: 1})
	require.Nil(t, cmd, "the tick scheduled before r")
	_, cmd = m.Update(tickMsg{n: m.tick})
	require.NotNil(t, cmd)
}

// TestParseCounters reads the two counters per channel from /metrics.
func TestParseCounters(t *testing.T) {
	t.Parallel()
	got, err := parseCounters(strings.NewReader(`# HELP mio_inbound_messages_total Inbound messages committed, by channel.
# TYPE mio_inbound_messages_total counter
mio_inbound_messages_total{channel_type="slack"} 12
mio_inbound_messages_total{channel_type="webhook"} 3
# TYPE mio_gateway_outbound_send_total counter
mio_gateway_outbound_send_total{channel_type="slack",direction="outbound",outcome="success"} 5
mio_gateway_outbound_send_total{channel_type="slack",direction="outbound",outcome="permanent_error"} 9
# TYPE go_goroutines gauge
go_goroutines 42
`))
	require.NoError(t, err)
	require.Equal(t, map[string]Counts{"slack": {Received: 12, Sent: 5}, "webhook": {Received: 3}}, got)
}

// TestKeys: views by number, tab and several keys read at once; t cycles
// every tenant, each tenant, every tenant; / types a tenant.
func TestKeys(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // tails hang until the model lets go
	}))
	t.Cleanup(api.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := fixture()
	m := newModel(ctx, NewClient(api.URL, "mioadm_x"), Options{AdminURL: api.URL, Interval: time.Second}, s)
	m.Init()
	m.Update(snapMsg{snap: s})
	press := func(keys string) {
		t.Helper()
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(keys)})
	}

	press("4")
	require.Equal(t, viewDead, m.view)
	m.Update(tea.KeyMsg{Type: tea.KeyTab})
	require.Equal(t, viewTail, m.view)
	press("2t") // two keys in one read
	require.Equal(t, viewQueues, m.view)
	require.Equal(t, s.Tenants[0].ID, m.tenant)
	require.Contains(t, m.View(), "tenant acme ·")
	press("t")
	require.Equal(t, s.Tenants[1].ID, m.tenant)
	press("t")
	require.Empty(t, m.tenant, "after the last tenant: every tenant")

	press("/acm")
	require.Contains(t, m.View(), "tenant (name or id; empty: all): acm█")
	m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	press("me")
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	require.Nil(t, m.prompt)
	require.Equal(t, s.Tenants[0].ID, m.tenant)
	press("/0190bb")
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	require.Equal(t, s.Tenants[1].ID, m.tenant, "an id's start")

	press("1")
	for range 100 {
		m.Update(tea.KeyMsg{Type: tea.KeyDown})
	}
	require.Equal(t, 40-20, m.scroll[viewConsumers], "scrolls no further than the last row")
	press("/nobody")
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	require.Contains(t, m.View(), `! no tenant named "nobody"`)

	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	require.NotNil(t, cmd)
	require.Equal(t, tea.QuitMsg{}, cmd())
}
