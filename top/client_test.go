package top

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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

// TestTailStream reads the tail's Server-Sent Events: live once the
// stream starts, then each message event (comments and other events
// skipped), the envelope's text or what stands for it.
func TestTailStream(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/v1/tenants/t1/tail" || r.Header.Get("Authorization") != "Bearer mioadm_x" {
			http.Error(w, `{"error":{"code":"unauthorized","message":"no"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": mio live tail\n\n")
		for _, env := range []string{
			`{"sender":{"id":"U1","display_name":"Ann"},"text":"hi\nthere"}`,
			`{"sender":{"id":"U2"},"text":"","attachments":[{},{}]}`,
			`{"sender":{"id":"U3"},"text":"gone","deleted":true}`,
		} {
			fmt.Fprintf(w, "event: message\nid: m\ndata: {\"id\":\"m\",\"channel_type\":\"slack\",\"conversation_id\":\"C1\",\"received_at\":\"2026-11-28T15:04:05Z\",\"envelope\":%s}\n\n", env)
		}
		fmt.Fprint(w, "event: other\ndata: {}\n\n")
	}))
	t.Cleanup(api.Close)

	var live int
	var got []TailMessage
	err := NewClient(api.URL, "mioadm_x").Tail(t.Context(), "t1", func() { live++ }, func(m TailMessage) { got = append(got, m) })
	require.EqualError(t, err, "tail: the stream ended")
	require.Equal(t, 1, live)
	require.Len(t, got, 3)
	require.Equal(t, TailMessage{ID: "m", TenantID: "t1", ChannelType: "slack", ConversationID: "C1",
		ReceivedAt: time.Date(2026, 11, 28, 15, 4, 5, 0, time.UTC), Sender: "Ann", Text: "hi\nthere"}, got[0])
	require.Equal(t, "(2 attachments)", got[1].Text)
	require.Equal(t, "U2", got[1].Sender)
	require.Equal(t, "(deleted)", got[2].Text)

	err = NewClient(api.URL, "mioadm_wrong").Tail(t.Context(), "t1", func() { live++ }, func(TailMessage) {})
	require.ErrorIs(t, err, ErrUnauthorized)
	require.Equal(t, 1, live)
}
