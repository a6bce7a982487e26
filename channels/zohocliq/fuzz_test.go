package zohocliq

import (
	"net/http"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

func FuzzParse(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add("application/json", b) })
	f.Add("", []byte(`{"handler":"message","message":"x","user":{"id":1},"chat":{"id":2,"type":"channel"},"attachments":{"url":"u","size":-1}}`))
	f.Add("text/plain", []byte(`{}`))
	f.Add("application/json; charset=utf-8", []byte(`{"type":"mention_handler","time":"1e400","chat":{"id":"c"},"user":{"id":"u"},"message":{"file":[1,{"url":"x","type":"image/"}]}}`))
	in := tokenInbound(f, "fuzz")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		p := channelstest.CheckParse(t, envelope.ChannelZohoCliq, in, &channels.Request{Header: h, Body: body})
		if p == nil {
			return
		}
		for _, m := range p.Messages {
			for _, a := range m.Attachments {
				if a.Source.URL == "" {
					t.Fatalf("attachment without a URL %+v", a)
				}
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	a, _ := testKeys(f)
	rsaIn := rsaInbound(f, a, nil)
	tokIn := tokenInbound(f, "fuzz-token")
	for _, fx := range channelstest.ReadFixtures(f, "testdata") {
		f.Add(sign(f, a, fx.Body), "fuzz-token", fx.Body)
	}
	f.Add("", "", []byte{})
	f.Add("AAAA", "fuzz", []byte(`{}`))
	f.Fuzz(func(t *testing.T, sig, token string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		h.Set(HeaderToken, token)
		req := &channels.Request{Header: h, Body: body}
		channelstest.CheckVerify(t, rsaIn, req)
		if accepted, want := channelstest.CheckVerify(t, tokIn, req), h.Get(HeaderToken) == "fuzz-token"; accepted != want {
			t.Fatalf("token %q: accepted %v, want %v", token, accepted, want)
		}
	})
}
