package slack

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

func FuzzParse(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add(b, "application/json") })
	f.Add([]byte(knownAnswerBody), "application/x-www-form-urlencoded")
	for _, fx := range channelstest.ReadFixtures(f, "testdata") {
		if fx.ContentType != "" {
			f.Add(fx.Body, fx.ContentType)
		}
	}
	f.Add([]byte(`payload=%7B%22type%22%3A%22block_actions%22%2C%22trigger_id%22%3A%22t%22%2C%22user%22%3A%7B%22id%22%3A%22U%22%7D%2C%22container%22%3A%7B%22channel_id%22%3A%22C%22%7D%2C%22actions%22%3A%5B%7B%22action_id%22%3A%22a%22%7D%2C%7B%22action_id%22%3A%22b%22%2C%22selected_options%22%3A%5B%7B%22value%22%3A%22v%22%7D%5D%7D%5D%7D`), "application/x-www-form-urlencoded")
	f.Add([]byte("payload=%ff&payload=x"), "application/x-www-form-urlencoded; charset=utf-8")
	f.Add([]byte(`{"type":"event_callback","event_id":"E","event":{"type":"reaction_added","user":"U","reaction":"x","item":{"type":"message","channel":"C","ts":"1.2"}}}`), "")
	f.Add([]byte(`{"type":"event_callback","event_id":"E","event":{"type":"message","subtype":"message_deleted","channel":"C"}}`), "")
	f.Add([]byte(`{"type":"event_callback","event_id":"E","event":{"type":"message","text":"<<@>|&amp;<!^|>","user":"U","channel":"C","ts":"1."}}`), "application/json; charset=utf-8")
	in := newTestInbound(f, nil, "")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		got := channelstest.CheckParse(t, envelope.ChannelSlack, in, &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow})
		if got == nil {
			return
		}
		for _, m := range got.Messages {
			for _, a := range m.Attachments {
				if a.Kind == envelope.KindSticker {
					t.Fatalf("Slack has no stickers: %+v", a)
				}
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	for _, fx := range channelstest.ReadFixtures(f, "testdata") {
		f.Add(fx.Body, ts, Signature(testSecret, ts, fx.Body))
	}
	f.Add([]byte(knownAnswerBody), "1531420618", knownAnswerSignature)
	f.Add([]byte("{}"), "-1", "v0=")
	f.Add([]byte("{}"), ts, "v0=00")
	in := newTestInbound(f, nil, "")
	f.Fuzz(func(t *testing.T, body []byte, timestamp, signature string) {
		h := http.Header{}
		h.Set(HeaderTimestamp, timestamp)
		h.Set(HeaderSignature, signature)
		accepted := channelstest.CheckVerify(t, in, &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow})
		if accepted && !strings.EqualFold(signature, Signature(testSecret, timestamp, body)) {
			t.Fatalf("accepted a signature that is not ours: %q", signature)
		}
	})
}

// FuzzDecodeLikeEncodingJSON: the one-pass decoder of Parse reads every
// body as encoding/json did, into each of the types Parse decodes.
func FuzzDecodeLikeEncodingJSON(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add(b) })
	for _, fx := range channelstest.ReadFixtures(f, "testdata") {
		f.Add(fx.Body)
	}
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		channelstest.CheckDecodesLikeEncodingJSON(t, body, func() any { return new(outerPayload) })
		channelstest.CheckDecodesLikeEncodingJSON(t, body, func() any { return new(messageEvent) })
		channelstest.CheckDecodesLikeEncodingJSON(t, body, func() any { return new(interactionPayload) })
		channelstest.CheckDecodesLikeEncodingJSON(t, body, func() any { return new(reactionEvent) })
	})
}

// decodeSeeds are the corners where encoding/json/v2's defaults differ
// from encoding/json's.
var decodeSeeds = []string{
	`{"type":"a","TYPE":"b","Type":"c"}`,
	`{"event_id":"E1","event_id":"E2"}`,
	`{"type":null,"event":null,"files":null,"message":null}`,
	`{"text":"\ud800","user":"\u00e9\ud83d\ude00"}`,
	"{\"text\":\"\xff\xfe\"}",
	`{"files":[{"size":1.5}]}`,
	`{"files":[{"size":1e3}]}`,
	`{"files":[{"size":-0}]}`,
	`{"files":[{"size":"1"}]}`,
	`{"user":{"id":"U"}}`,
	`{"message":{"message":{"text":"deep"}}}`,
	`{"type":"message"} trailing`,
	`{"type":"message",}`,
	` {"type" : "message" } `,
	`[]`,
	`null`,
	``,
}
