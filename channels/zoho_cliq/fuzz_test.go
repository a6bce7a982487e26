package zohocliq

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

func fixtureSeeds(f *testing.F) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatalf("read %s: %v", p, err)
		}
		out = append(out, b)
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, b := range fixtureSeeds(f) {
		f.Add("application/json", b)
	}
	f.Add("", []byte(`{"handler":"message","message":"x","user":{"id":1},"chat":{"id":2,"type":"channel"},"attachments":{"url":"u","size":-1}}`))
	f.Add("text/plain", []byte(`{}`))
	f.Add("application/json; charset=utf-8", []byte(`{"type":"mention_handler","time":"1e400","chat":{"id":"c"},"user":{"id":"u"},"message":{"file":[1,{"url":"x","type":"image/"}]}}`))

	in := tokenInbound(f, "fuzz")
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		p, err := in.Parse(context.Background(), &channels.Request{Header: h, Body: body})
		if err != nil {
			var bad *channels.BadRequestError
			if !errors.As(err, &bad) && !errors.Is(err, channels.ErrUnsupportedMediaType) {
				t.Fatalf("untyped error: %v", err)
			}
			if p != nil {
				t.Fatalf("result together with error")
			}
			return
		}
		if p == nil {
			t.Fatalf("nil result without error")
		}
		for _, m := range p.Messages {
			if m.SourceMessageID == "" || m.Conversation.ID == "" || m.Sender.ID == "" {
				t.Fatalf("message missing required fields: %+v", m)
			}
			if m.ChannelType != envelope.ChannelZohoCliq {
				t.Fatalf("channel type %q", m.ChannelType)
			}
			switch m.Conversation.Type {
			case envelope.ConversationDM, envelope.ConversationGroup, envelope.ConversationChannel:
			default:
				t.Fatalf("conversation type %q", m.Conversation.Type)
			}
			for _, a := range m.Attachments {
				if a.Source == nil || a.Source.URL == "" || a.Status != envelope.AttachmentPending || a.Size < 0 {
					t.Fatalf("bad attachment %+v", a)
				}
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	a, _ := testKeys(f)
	rsaIn := rsaInbound(f, a, nil)
	tokIn := tokenInbound(f, "fuzz-token")
	for _, b := range fixtureSeeds(f) {
		f.Add(sign(f, a, b), "fuzz-token", b)
	}
	f.Add("", "", []byte{})
	f.Add("AAAA", "fuzz", []byte(`{}`))
	f.Fuzz(func(t *testing.T, sig, token string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		h.Set(HeaderToken, token)
		req := &channels.Request{Header: h, Body: body}
		if err := rsaIn.Verify(context.Background(), req); err != nil && !errors.Is(err, channels.ErrUnauthorized) {
			t.Fatalf("rsa: error is not ErrUnauthorized: %v", err)
		}
		err := tokIn.Verify(context.Background(), req)
		if h.Get(HeaderToken) == "fuzz-token" {
			if err != nil {
				t.Fatalf("token: right token refused: %v", err)
			}
		} else if !errors.Is(err, channels.ErrUnauthorized) {
			t.Fatalf("token: wrong token not refused: %v", err)
		}
	})
}
