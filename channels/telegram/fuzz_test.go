package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
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

func FuzzParse(f *testing.F) {
	seedFixtures(f, func(b []byte) { f.Add("application/json", b) })
	f.Add("", []byte(`{"update_id":1,"callback_query":{"from":{"id":1},"message":{"chat":{"id":-1}}}}`))
	f.Add("text/plain", []byte(`{}`))
	f.Add("application/json; charset=utf-8", []byte(`{"update_id":1,"message":{"chat":{"id":1},"photo":[{"file_id":"a","width":-1,"height":-1}]}}`))
	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testSecret})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		got, err := in.Parse(context.Background(), &channels.Request{Method: http.MethodPost, Header: h, Body: body})
		requireTypedError(t, err)
		if err != nil {
			return
		}
		for _, m := range got.Messages {
			if m.SourceMessageID == "" {
				t.Fatal("empty SourceMessageID")
			}
			if m.Conversation.ID == "" || m.Conversation.Type == "" {
				t.Fatalf("incomplete conversation %+v", m.Conversation)
			}
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("message does not marshal: %v", err)
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add(testSecret)
	f.Add("")
	f.Add(testSecret + "x")
	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testSecret})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		h := http.Header{}
		h.Set(SecretTokenHeader, token)
		err := in.Verify(context.Background(), &channels.Request{Method: http.MethodPost, Header: h})
		if h.Get(SecretTokenHeader) == testSecret {
			if err != nil {
				t.Fatalf("correct token rejected: %v", err)
			}
			return
		}
		if !errors.Is(err, channels.ErrUnauthorized) {
			t.Fatalf("token %q: want ErrUnauthorized, got %v", token, err)
		}
	})
}
