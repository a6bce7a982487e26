package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMCPStream: a delivery answered by a streamed reply — stream_start
// (acknowledging it), appends (a repeated seq changes nothing, a gap is a
// tool error), stream_finish, then an append after the finish is refused.
// Over both transports.
func TestMCPStream(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := st.connect(t, tr, st.a.agent)
			consumer := "stream-" + tr
			require.Empty(t, deliveries(ok(t, cs, "pull_messages", map[string]any{"consumer": consumer, "wait": "0s"})))
			st.webhook(t, st.a, "sconv-"+tr, "question "+tr)
			d := pullOne(t, cs, consumer)

			s := ok(t, cs, "stream_start", map[string]any{"consumer": consumer, "delivery_id": d["delivery_id"], "text": "…"})
			id := s["outbound_id"]
			again := ok(t, cs, "stream_start", map[string]any{"consumer": consumer, "delivery_id": d["delivery_id"], "text": "…"})
			require.Equal(t, id, again["outbound_id"], "starting twice for a delivery opens one stream")
			res := ok(t, cs, "ack_messages", map[string]any{"consumer": consumer, "delivery_ids": []any{d["delivery_id"]}})
			require.Equal(t, false, res["results"].([]any)[0].(map[string]any)["ok"], "acknowledged by stream_start")

			ok(t, cs, "stream_append", map[string]any{"outbound_id": id, "seq": 1, "text": " the"})
			ok(t, cs, "stream_append", map[string]any{"outbound_id": id, "seq": 1, "text": " the"})
			require.Contains(t, fails(t, cs, "stream_append", map[string]any{"outbound_id": id, "seq": 3, "text": "x"}), "expects 2")
			ok(t, cs, "stream_append", map[string]any{"outbound_id": id, "seq": 2, "text": " answer"})
			fin := ok(t, cs, "stream_finish", map[string]any{"outbound_id": id, "seq": 2})
			require.Equal(t, true, fin["finished"])
			require.Contains(t, fails(t, cs, "stream_append", map[string]any{"outbound_id": id, "seq": 3, "text": "x"}), "finished")

			status := ok(t, cs, "get_send_status", map[string]any{"id": id})
			require.Equal(t, "… the answer", status["text"])

			other := st.connect(t, tr, st.b.agent)
			require.Contains(t, fails(t, other, "stream_append", map[string]any{"outbound_id": id, "seq": 3, "text": "x"}), "no such")
		})
	}
}
