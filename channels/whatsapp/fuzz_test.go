package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miohq/mio/channels"
)

// requireTypedError fails unless err is nil or one of the kinds the HTTP
// layer maps to a status.
func requireTypedError(t *testing.T, err error) {
	t.Helper()
	var bad *channels.BadRequestError
	switch {
	case err == nil,
		errors.As(err, &bad),
		errors.Is(err, channels.ErrUnsupportedMediaType),
		errors.Is(err, channels.ErrUnauthorized):
	default:
		t.Fatalf("untyped error %T: %v", err, err)
	}
}

func seedFixtures(f *testing.F, add func(body []byte)) {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
}

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
	seedFixtures(f, func(b []byte) { f.Add(http.MethodPost, "application/json", "", b) })
	f.Add(http.MethodGet, "", "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token="+testVerifyToken, []byte(nil))
	f.Add(http.MethodGet, "", "hub.challenge=", []byte(nil))
	f.Add("", "text/plain", "", []byte(`{}`))
	f.Add(http.MethodPost, "", "", []byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"messages":[{"from":"1","id":"w","timestamp":"-1","type":"location","location":{"latitude":1e400}}]}}]}]}`))
	in := fuzzInbound(f)
	f.Fuzz(func(t *testing.T, method, contentType, query string, body []byte) {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		q, _ := url.ParseQuery(query)
		got, err := in.Parse(context.Background(), &channels.Request{Method: method, Header: h, Query: q, Body: body})
		requireTypedError(t, err)
		if err != nil {
			return
		}
		for _, m := range got.Messages {
			if m.SourceMessageID == "" || m.Conversation.ID == "" || m.Sender.ID == "" {
				t.Fatalf("message missing ids: %+v", m)
			}
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("message does not marshal: %v", err)
			}
		}
		for _, s := range got.Statuses {
			if s.ProviderMessageID == "" || s.Status == "" {
				t.Fatalf("status missing fields: %+v", s)
			}
			if _, err := json.Marshal(s); err != nil {
				t.Fatalf("status does not marshal: %v", err)
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	seedFixtures(f, func(b []byte) { f.Add(Sign(testAppSecret, b), b) })
	f.Add("sha256=", []byte(nil))
	f.Add("", []byte("x"))
	in := fuzzInbound(f)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := http.Header{}
		h.Set(SignatureHeader, sig)
		err := in.Verify(context.Background(), &channels.Request{Method: http.MethodPost, Header: h, Body: body})
		valid := strings.EqualFold(h.Get(SignatureHeader), Sign(testAppSecret, body))
		switch {
		case valid && err != nil:
			t.Fatalf("valid signature rejected: %v", err)
		case !valid && !errors.Is(err, channels.ErrUnauthorized):
			t.Fatalf("signature %q: want ErrUnauthorized, got %v", sig, err)
		}
	})
}
