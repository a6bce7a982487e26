package slack

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

func fixtureBodies(f *testing.F) [][]byte {
	f.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(f, err)
	require.NotEmpty(f, names)
	var out [][]byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		out = append(out, b)
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, b := range fixtureBodies(f) {
		f.Add(b, "application/json")
	}
	f.Add([]byte(knownAnswerBody), "application/x-www-form-urlencoded")
	f.Add([]byte(`{"type":"event_callback","event_id":"E","event":{"type":"message","subtype":"message_deleted","channel":"C"}}`), "")
	f.Add([]byte(`{"type":"event_callback","event_id":"E","event":{"type":"message","text":"<<@>|&amp;<!^|>","user":"U","channel":"C","ts":"1."}}`), "application/json; charset=utf-8")

	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testSecret})
	require.NoError(f, err)
	kinds := map[string]bool{envelope.KindImage: true, envelope.KindFile: true, envelope.KindAudio: true, envelope.KindVideo: true}
	convTypes := map[string]bool{envelope.ConversationDM: true, envelope.ConversationGroup: true, envelope.ConversationChannel: true}

	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		got, err := in.Parse(context.Background(), &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow})
		if err != nil {
			var bad *channels.BadRequestError
			if !errors.As(err, &bad) && !errors.Is(err, channels.ErrUnsupportedMediaType) {
				t.Fatalf("untyped error: %v", err)
			}
			if got != nil {
				t.Fatalf("non-nil result with error %v", err)
			}
			return
		}
		for _, m := range got.Messages {
			if m.SourceMessageID == "" || m.Conversation.ID == "" || !convTypes[m.Conversation.Type] {
				t.Fatalf("incomplete message: %+v", m)
			}
			if m.ChannelType != envelope.ChannelSlack || string(m.Raw) != string(body) {
				t.Fatalf("wrong channel type or raw: %+v", m)
			}
			if m.Sender.ID == "" && !m.Deleted {
				t.Fatalf("message without sender: %+v", m)
			}
			for _, a := range m.Attachments {
				if !kinds[a.Kind] || a.Status != envelope.AttachmentPending || a.Source == nil || (a.Source.URL == "" && a.Source.Ref == "") || a.Size < 0 {
					t.Fatalf("bad attachment: %+v", a)
				}
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	for _, b := range fixtureBodies(f) {
		f.Add(b, ts, Signature(testSecret, ts, b))
	}
	f.Add([]byte(knownAnswerBody), "1531420618", knownAnswerSignature)
	f.Add([]byte("{}"), "-1", "v0=")
	f.Add([]byte("{}"), ts, "v0=00")

	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testSecret})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, body []byte, timestamp, signature string) {
		h := http.Header{}
		h.Set(HeaderTimestamp, timestamp)
		h.Set(HeaderSignature, signature)
		err := in.Verify(context.Background(), &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow})
		if err != nil && !errors.Is(err, channels.ErrUnauthorized) {
			t.Fatalf("untyped error: %v", err)
		}
		if err == nil && !strings.EqualFold(signature, Signature(testSecret, timestamp, body)) {
			t.Fatalf("accepted a signature that is not ours: %q", signature)
		}
	})
}
