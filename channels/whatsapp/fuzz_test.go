package whatsapp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

func fuzzInbound(f *testing.F) channels.Inbound {
	f.Helper()
	// The fixtures' number: the fuzzer reaches both the kept and the
	// left-out (another phone number) paths.
	in, err := New(Options{}).NewInbound(channels.Account{
		Settings:      json.RawMessage(`{"phone_number_id":"106540352242922"}`),
		Credentials:   json.RawMessage(`{"verify_token":"` + testVerifyToken + `"}`),
		WebhookSecret: testAppSecret,
	})
	if err != nil {
		f.Fatal(err)
	}
	return in
}

func FuzzParse(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add(http.MethodPost, "application/json", "", b) })
	f.Add(http.MethodGet, "", "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token="+testVerifyToken, []byte(nil))
	f.Add(http.MethodGet, "", "hub.challenge=", []byte(nil))
	f.Add("", "text/plain", "", []byte(`{}`))
	f.Add(http.MethodPost, "", "", []byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"messages":[{"from":"1","id":"w","timestamp":"-1","type":"location","location":{"latitude":1e400}}]}}]}]}`))
	in := fuzzInbound(f)
	f.Fuzz(func(t *testing.T, method, contentType, query string, body []byte) {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		q, _ := url.ParseQuery(query)
		channelstest.CheckParse(t, envelope.ChannelWhatsApp, in, &channels.Request{Method: method, Header: h, Query: q, Body: body})
	})
}

func FuzzVerify(f *testing.F) {
	for _, fx := range channelstest.ReadFixtures(f, "testdata") {
		f.Add(Sign(testAppSecret, fx.Body), fx.Body)
	}
	f.Add("sha256=", []byte(nil))
	f.Add("", []byte("x"))
	in := fuzzInbound(f)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := http.Header{}
		h.Set(SignatureHeader, sig)
		accepted := channelstest.CheckVerify(t, in, &channels.Request{Method: http.MethodPost, Header: h, Body: body})
		if want := strings.EqualFold(h.Get(SignatureHeader), Sign(testAppSecret, body)); accepted != want {
			t.Fatalf("signature %q: accepted %v, want %v", sig, accepted, want)
		}
	})
}
