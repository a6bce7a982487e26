package discord

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
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
	f.Add("", []byte(`{"type":1}`))
	f.Add("text/plain", []byte(`{"type":2}`))
	f.Add("application/json; charset=utf-8", []byte(`{"type":2,"id":"18446744073709551615","channel_id":"1","user":{"id":"2"},"data":{"name":"x","options":[{"name":"a","options":[{"name":"b","type":11,"value":"9"}]}],"resolved":{"attachments":{"9":{"url":"u","size":-5}}}}}`))

	in := newTestInbound(f, ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
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
		if p == nil || p.Reply == nil {
			t.Fatalf("no result and no reply")
		}
		for _, m := range p.Messages {
			if m.SourceMessageID == "" || m.Conversation.ID == "" || m.Sender.ID == "" {
				t.Fatalf("message missing required fields: %+v", m)
			}
			if m.ChannelType != envelope.ChannelDiscord {
				t.Fatalf("channel type %q", m.ChannelType)
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
	pub, priv := newKey(f)
	in := newTestInbound(f, pub)
	for _, b := range fixtureSeeds(f) {
		req := signedRequest(priv, testNow, b)
		f.Add(req.Header.Get(HeaderSignature), req.Header.Get(HeaderTimestamp), b)
	}
	f.Add("", "", []byte{})
	f.Add(hex.EncodeToString(make([]byte, 64)), "-1", []byte(`{"type":1}`))
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		h.Set(HeaderTimestamp, ts)
		req := &channels.Request{Header: h, Body: body, Now: testNow}
		err := in.Verify(context.Background(), req)
		if err == nil {
			// Only a genuine signature by priv may pass.
			want := ed25519.Sign(priv, append([]byte(ts), body...))
			if hex.EncodeToString(want) != sig && hex.EncodeToString(want) != hexLower(sig) {
				t.Fatalf("forged signature accepted")
			}
			return
		}
		if !errors.Is(err, channels.ErrUnauthorized) {
			t.Fatalf("error is not ErrUnauthorized: %v", err)
		}
	})
}

func hexLower(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		return s
	}
	return hex.EncodeToString(b)
}
