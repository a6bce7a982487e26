package top

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
