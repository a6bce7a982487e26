package googlechat

import (
	"crypto"
	"crypto/rsa"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

func FuzzParse(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add("application/json", b) })
	f.Add("", []byte(`{"type":"MESSAGE","message":{"name":"n","sender":{"name":"users/1"},"space":{"name":"spaces/a","spaceType":"DIRECT_MESSAGE"},"attachment":[{"attachmentDataRef":{"resourceName":""}},{"attachmentDataRef":{"resourceName":"r"},"contentType":"Image/PNG"}]}}`))
	f.Add("application/json", []byte(`{"type":"MESSAGE","message":{"name":"n","createTime":"x","lastUpdateTime":"9999-99-99T00:00:00Z","space":{"name":"spaces/a"}},"user":{"name":"users/1"}}`))
	f.Add("application/json", []byte(`{"type":"CARD_CLICKED","action":{"actionMethodName":"a","parameters":[{"key":"","value":""},null]},"space":{"name":"s","type":"DM"},"user":{"name":"u"}}`))
	f.Add("text/plain", []byte(`{"type":"ADDED_TO_SPACE","message":null}`))
	in, err := testChannel().NewInbound(channels.Account{ExternalID: testProject})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		p := channelstest.CheckParse(t, envelope.ChannelGoogleChat, in, &channels.Request{Header: h, Body: body})
		if p == nil {
			return
		}
		if len(p.Messages) > 1 {
			t.Fatalf("one event gave %d messages", len(p.Messages))
		}
		for _, m := range p.Messages {
			for _, a := range m.Attachments {
				if a.Source.Ref == "" || a.Source.URL != "" {
					t.Fatalf("attachment not by resource name: %+v", a)
				}
			}
			if m.Edited != (m.EditOf != nil) {
				t.Fatalf("edited %v with edit_of %+v", m.Edited, m.EditOf)
			}
		}
	})
}

// FuzzVerify: a token is accepted only when its signed part (header and
// claims) is one the fake Google signed.
func FuzzVerify(f *testing.F) {
	g := channelstest.NewFakeGoogle(f, time.Hour)
	in, err := testChannel().NewInbound(channels.Account{Settings: g.Settings(testProject, testEndpoint)})
	if err != nil {
		f.Fatal(err)
	}
	valid := map[string]bool{}
	for _, tok := range []string{g.ChatToken(f, testProject, testNow.Add(-time.Minute)), g.OIDCToken(f, testEndpoint, testNow.Add(-time.Minute))} {
		valid[tok[:strings.LastIndexByte(tok, '.')]] = true
		f.Add("Bearer " + tok)
		f.Add("bearer  " + tok + " ")
	}
	f.Add("")
	f.Add("Bearer")
	f.Add("Bearer a.b.c")
	f.Add("Basic dXNlcjpwYXNz")
	f.Add("Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJjaGF0QHN5c3RlbS5nc2VydmljZWFjY291bnQuY29tIn0.")
	f.Fuzz(func(t *testing.T, authorization string) {
		h := http.Header{}
		h.Set("Authorization", authorization)
		req := &channels.Request{Header: h, Now: testNow}
		if !channelstest.CheckVerify(t, in, req) {
			return
		}
		tok, _ := bearer(authorization)
		if i := strings.LastIndexByte(tok, '.'); i < 0 || !valid[tok[:i]] {
			t.Fatalf("accepted a token the fake did not sign: %q", authorization)
		}
	})
}

func FuzzDecodeLikeEncodingJSON(f *testing.F) {
	channelstest.FuzzDecodesLikeEncodingJSON(f, "testdata", func() any { return new(event) },
		`{"TYPE":"MESSAGE","Message":{"NAME":"n"}}`, `{"type":"MESSAGE","type":"CARD_CLICKED"}`, `{"message":{"attachment":[{"attachmentDataRef":null}]}}`)
}

// FuzzKeySets: the key set parsers never panic, and every key they return
// is an RSA key of at least minKeyBits.
func FuzzKeySets(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"RSA","kid":"k","use":"sig","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","kid":"k","n":"","e":"AAAAAAAB"},{"kty":"EC"},null]}`))
	f.Add([]byte(`{"k":"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}`))
	f.Add([]byte(`{"k":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, parse := range []func([]byte) (map[string]crypto.PublicKey, error){parseJWKS, parseX509Set} {
			keys, err := parse(body)
			if err != nil {
				continue
			}
			for kid, k := range keys {
				rk, ok := k.(*rsa.PublicKey)
				if !ok || rk.N.BitLen() < minKeyBits || rk.E < 3 {
					t.Fatalf("key %q: %#v", kid, k)
				}
			}
		}
	})
}
