package discord

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

func FuzzParse(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add("application/json", b) })
	f.Add("", []byte(`{"type":1}`))
	f.Add("text/plain", []byte(`{"type":2}`))
	f.Add("application/json; charset=utf-8", []byte(`{"type":2,"id":"18446744073709551615","channel_id":"1","user":{"id":"2"},"data":{"name":"x","options":[{"name":"a","options":[{"name":"b","type":11,"value":"9"}]}],"resolved":{"attachments":{"9":{"url":"u","size":-5}}}}}`))
	in := newTestInbound(f, ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		p := channelstest.CheckParse(t, envelope.ChannelDiscord, in, &channels.Request{Header: h, Body: body})
		if p == nil {
			return
		}
		if p.Reply == nil {
			t.Fatalf("an interaction without a reply")
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
	pub, priv := newKey(f)
	in := newTestInbound(f, pub)
	for _, fx := range channelstest.ReadFixtures(f, "testdata") {
		req := signedRequest(priv, testNow, fx.Body)
		f.Add(req.Header.Get(HeaderSignature), req.Header.Get(HeaderTimestamp), fx.Body)
	}
	f.Add("", "", []byte{})
	f.Add(hex.EncodeToString(make([]byte, 64)), "-1", []byte(`{"type":1}`))
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		h.Set(HeaderTimestamp, ts)
		accepted := channelstest.CheckVerify(t, in, &channels.Request{Header: h, Body: body, Now: testNow})
		// Only a genuine signature by priv may pass.
		want := hex.EncodeToString(ed25519.Sign(priv, append([]byte(ts), body...)))
		if accepted && !strings.EqualFold(sig, want) {
			t.Fatalf("forged signature accepted")
		}
	})
}

func FuzzParseMessageEvent(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add(EventMessageCreate, b) })
	f.Add(EventMessageUpdate, []byte(`{"id":"1","channel_id":"2","content":"x","edited_timestamp":"2026-01-01T00:00:00Z","author":{"id":"3"}}`))
	f.Add(EventMessageDelete, []byte(`{"id":"1","channel_id":"2"}`))
	f.Fuzz(func(t *testing.T, eventType string, body []byte) {
		p, err := ParseMessageEvent(eventType, body, "9")
		if err != nil {
			var bre *channels.BadRequestError
			if !errors.As(err, &bre) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, m := range p.Messages {
			if m.SourceMessageID == "" || m.Conversation.ID == "" {
				t.Fatalf("message without dedup key or conversation: %+v", m)
			}
		}
	})
}

func FuzzParseReactionEvent(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add(EventReactionAdd, b) })
	f.Add(EventReactionAdd, []byte(`{"user_id":"1","channel_id":"2","message_id":"3","guild_id":"4","emoji":{"id":null,"name":"🔥"},"member":{"user":{"id":"1","username":"ada"}}}`))
	f.Add(EventReactionRemove, []byte(`{"user_id":"1","channel_id":"2","message_id":"3","emoji":{"id":"5","name":"party"}}`))
	f.Add(EventReactionAdd, []byte(`{"user_id":"9","channel_id":"2","message_id":"3","emoji":{"name":null}}`))
	f.Fuzz(func(t *testing.T, eventType string, body []byte) {
		p, err := ParseReactionEvent(eventType, body, "9", "s:1")
		if err != nil {
			var bre *channels.BadRequestError
			if !errors.As(err, &bre) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, m := range p.Messages {
			if m.SourceMessageID == "" || m.Conversation.ID == "" || m.Reaction == nil || m.Reaction.MessageID == "" {
				t.Fatalf("reaction without dedup key, conversation or message: %+v", m)
			}
		}
	})
}
