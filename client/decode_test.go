package client

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

type pullAnswer struct {
	Deliveries []Delivery `json:"deliveries"`
}

// pullBody is a pull answer of n deliveries as the server writes it
// (httpapi.writePull): stored envelopes with their raw payload appended.
func pullBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"deliveries":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		id := uuid.New()
		fmt.Fprintf(&b, `{"delivery_id":"%s","seq":%d,"delivery_count":%d,"message":{"id": "%s", "raw": {"event": {"ts": "1.2", "n": [1, 2.5, null]}}, "text": "%s", "edited": %t, "sender": {"id": "u1", "is_bot": false, "display_name": "Zoë"}, "deleted": false, "sent_at": "2026-11-24T09:00:00.123456+00:00", "edit_of": {"id": "%s", "source_message_id": "s-%d", "platform_message_id": "p"}, "tenant_id": "%s", "thread_id": "t-%d", "trace_id": "00-abc-01", "account_id": "%s", "attachments": [{"id": "a1", "kind": "image", "size": 12, "status": "stored", "source": {"url": "https://x/y"}}], "conversation": {"id": "conv-%d", "type": "dm", "title": "Ünïcode ☃"}, "channel_type": "webhook", "received_at": "%s", "source_message_id": "pre-%s"}}`,
			uuid.New(), i, 1+i%3, id, strings.Repeat("x", 300)+`\n\"q\" \u00e9`, i%2 == 0, uuid.New(), i, uuid.New(), i, uuid.New(), i%100,
			time.Date(2026, 11, 24, 9, 0, 0, i*1000, time.UTC).Format(time.RFC3339Nano), id)
	}
	b.WriteString("]}\n")
	return []byte(b.String())
}

// TestPullDecodeMatchesEncodingJSON: the pull's decoder gives the same
// Deliveries as encoding/json, including on input encoding/json tolerates
// (a duplicate name, invalid UTF-8, a differently cased name).
func TestPullDecodeMatchesEncodingJSON(t *testing.T) {
	bodies := [][]byte{
		pullBody(1),
		pullBody(50),
		[]byte(`{"deliveries":[]}`),
		[]byte(`{"deliveries":null}`),
		[]byte(`{"deliveries":[{"delivery_id":"` + uuid.NewString() + `","seq":1,"delivery_count":1,"message":null}]}`),
		[]byte(`{"deliveries":[{"Delivery_ID":"` + uuid.NewString() + `","seq":2,"seq":3,"message":{"text":"bad ` + "\xff" + ` utf8","raw":{"a":1,"a":2}}}]}`),
		[]byte(`{"deliveries":[{"seq":1,"message":{"text":"x","unknown":{"deep":[1,2,3]}}}],"extra":true}`),
		// v2's case-insensitive match would also drop '_' and '-':
		// "deliverycount" and "delivery-count" are not delivery_count.
		[]byte(`{"deliveries":[{"seq":1,"deliverycount":7,"delivery-count":8,"message":{"text":"x","channeltype":"slack"}}]}`),
	}
	for i, body := range bodies {
		var want, got pullAnswer
		require.NoError(t, json.Unmarshal(body, &want), "body %d", i)
		require.NoError(t, decodePull(body, &got), "body %d", i)
		require.Equal(t, want, got, "body %d", i)
	}
	for _, bad := range []string{`{"deliveries":[{"seq":"x"}]}`, `{"deliveries":[`, `{"deliveries":[{"delivery_id":"nope"}]}`} {
		var v1, v2 pullAnswer
		require.Error(t, json.Unmarshal([]byte(bad), &v1), bad)
		require.Error(t, decodePull([]byte(bad), &v2), bad)
	}
}

// BenchmarkPullDecode: a pull answer of 100 deliveries, decoded by the
// client's decoder and by encoding/json.
func BenchmarkPullDecode(b *testing.B) {
	body := pullBody(100)
	for _, c := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"client", decodePull}, {"encoding-json", json.Unmarshal}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var out pullAnswer
				if err := c.decode(body, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
