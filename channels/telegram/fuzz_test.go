package telegram

import (
	"net/http"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

func FuzzParse(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add("application/json", b) })
	f.Add("", []byte(`{"update_id":1,"callback_query":{"from":{"id":1},"message":{"chat":{"id":-1}}}}`))
	f.Add("text/plain", []byte(`{}`))
	f.Add("application/json; charset=utf-8", []byte(`{"update_id":1,"message":{"chat":{"id":1},"photo":[{"file_id":"a","width":-1,"height":-1}]}}`))
	in := newTestInbound(f)
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		channelstest.CheckParse(t, envelope.ChannelTelegram, in, &channels.Request{Method: http.MethodPost, Header: h, Body: body})
	})
}

func FuzzVerify(f *testing.F) {
	f.Add(testSecret)
	f.Add("")
	f.Add(testSecret + "x")
	in := newTestInbound(f)
	f.Fuzz(func(t *testing.T, token string) {
		h := http.Header{}
		h.Set(SecretTokenHeader, token)
		accepted := channelstest.CheckVerify(t, in, &channels.Request{Method: http.MethodPost, Header: h})
		if want := h.Get(SecretTokenHeader) == testSecret; accepted != want {
			t.Fatalf("token %q: accepted %v, want %v", token, accepted, want)
		}
	})
}

// FuzzDecodeLikeEncodingJSON: the one-pass decoder of Parse reads every
// body as encoding/json did.
func FuzzDecodeLikeEncodingJSON(f *testing.F) {
	channelstest.FuzzDecodesLikeEncodingJSON(f, "testdata", func() any { return new(update) },
		`{"Update_ID":1,"update_id":2,"_message":{}}`,
		`{"type":"message.created","TYPE":"x","data":{"size":1.5,"attachments":[{"size":1e2}]}}`)
}
