package webhook

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

func FuzzParse(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add(b, "application/json", testID) })
	f.Add([]byte(kaBody), "application/json", testID)
	f.Add([]byte(`{"type":"message.deleted","timestamp":"2024-05-01T12:00:01Z","data":{"conversation":{"id":"c"},"sender":{"id":"u"},"attachments":[{"url":"http://h/x","kind":"sticker"}]}}`), "", "id")
	f.Add([]byte(`{"type":"message.created","timestamp":"2024-05-01T12:00:01Z","data":{"conversation":{"id":"c"},"sender":{"id":"u"}}}`), "text/plain", "")
	in := newTestInbound(f, testSecret, "")
	f.Fuzz(func(t *testing.T, body []byte, contentType, id string) {
		h := http.Header{}
		h.Set(HeaderID, id)
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		got := channelstest.CheckParse(t, envelope.ChannelWebhook, in, &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow})
		if got == nil {
			return
		}
		if len(got.Messages) != 1 {
			t.Fatalf("want one message, got %d", len(got.Messages))
		}
		if m := got.Messages[0]; m.SourceMessageID != id || m.SentAt.IsZero() {
			t.Fatalf("source id is not webhook-id %q, or no time: %+v", id, m)
		}
	})
}

func FuzzVerify(f *testing.F) {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	seeds := [][]byte{[]byte(kaBody)}
	for _, fx := range channelstest.ReadFixtures(f, "testdata") {
		seeds = append(seeds, fx.Body)
	}
	for _, b := range seeds {
		sig, err := Sign(testSecret, testID, testNow, b)
		require.NoError(f, err)
		f.Add(b, testID, ts, sig)
		f.Add(b, testID, ts, "v1a,AAAA v2,BBBB "+sig)
	}
	f.Add([]byte(kaBody), kaID, strconv.Itoa(kaTimestamp), kaSignature)
	f.Add([]byte("{}"), "", "", "")
	f.Add([]byte("{}"), "id", "-1", "v1,")
	in := newTestInbound(f, testSecret, "")
	key, err := decodeSecret(testSecret)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, body []byte, id, timestamp, signature string) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, timestamp)
		h.Set(HeaderSignature, signature)
		if !channelstest.CheckVerify(t, in, &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow}) {
			return
		}
		// Accepted: the header must hold our v1 signature of exactly this
		// id, timestamp and body.
		if _, err := strconv.ParseInt(timestamp, 10, 64); err != nil {
			t.Fatalf("accepted an unparsable timestamp %q", timestamp)
		}
		want := "v1," + base64.StdEncoding.EncodeToString(mac(key, id, timestamp, body))
		if !slices.Contains(strings.Fields(signature), want) {
			t.Fatalf("accepted %q for id %q ts %s", signature, id, timestamp)
		}
	})
}

// FuzzDecodeLikeEncodingJSON: the one-pass decoder of Parse reads every
// body as encoding/json did.
func FuzzDecodeLikeEncodingJSON(f *testing.F) {
	channelstest.FuzzDecodesLikeEncodingJSON(f, "testdata", func() any { return new(payload) },
		`{"Update_ID":1,"update_id":2,"_message":{}}`,
		`{"type":"message.created","TYPE":"x","data":{"size":1.5,"attachments":[{"size":1e2}]}}`)
}
