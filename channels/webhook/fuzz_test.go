package webhook

import (
	"context"
	"encoding/base64"
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
	out := [][]byte{[]byte(kaBody)}
	for _, name := range names {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		out = append(out, b)
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, b := range fixtureBodies(f) {
		f.Add(b, "application/json", testID)
	}
	f.Add([]byte(`{"type":"message.deleted","timestamp":"2024-05-01T12:00:01Z","data":{"conversation":{"id":"c"},"sender":{"id":"u"},"attachments":[{"url":"http://h/x","kind":"sticker"}]}}`), "", "id")
	f.Add([]byte(`{"type":"message.created","timestamp":"2024-05-01T12:00:01Z","data":{"conversation":{"id":"c"},"sender":{"id":"u"}}}`), "text/plain", "")

	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testSecret})
	require.NoError(f, err)
	kinds := map[string]bool{envelope.KindImage: true, envelope.KindFile: true, envelope.KindAudio: true, envelope.KindVideo: true, envelope.KindSticker: true}
	convTypes := map[string]bool{envelope.ConversationDM: true, envelope.ConversationGroup: true, envelope.ConversationChannel: true}

	f.Fuzz(func(t *testing.T, body []byte, contentType, id string) {
		h := http.Header{}
		h.Set(HeaderID, id)
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
		if len(got.Messages) != 1 {
			t.Fatalf("want one message, got %d", len(got.Messages))
		}
		m := got.Messages[0]
		if m.SourceMessageID != id || id == "" || m.Conversation.ID == "" || !convTypes[m.Conversation.Type] || m.Sender.ID == "" {
			t.Fatalf("incomplete message: %+v", m)
		}
		if m.ChannelType != envelope.ChannelWebhook || string(m.Raw) != string(body) || m.SentAt.IsZero() {
			t.Fatalf("wrong channel type, raw or time: %+v", m)
		}
		for _, a := range m.Attachments {
			if !kinds[a.Kind] || a.Status != envelope.AttachmentPending || a.Source == nil || a.Source.URL == "" || a.Size < 0 {
				t.Fatalf("bad attachment: %+v", a)
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	for _, b := range fixtureBodies(f) {
		sig, err := Sign(testSecret, testID, testNow, b)
		require.NoError(f, err)
		f.Add(b, testID, ts, sig)
		f.Add(b, testID, ts, "v1a,AAAA v2,BBBB "+sig)
	}
	f.Add([]byte(kaBody), kaID, strconv.Itoa(kaTimestamp), kaSignature)
	f.Add([]byte("{}"), "", "", "")
	f.Add([]byte("{}"), "id", "-1", "v1,")

	in, err := New(Options{}).NewInbound(channels.Account{WebhookSecret: testSecret})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, body []byte, id, timestamp, signature string) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, timestamp)
		h.Set(HeaderSignature, signature)
		err := in.Verify(context.Background(), &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow})
		if err != nil && !errors.Is(err, channels.ErrUnauthorized) {
			t.Fatalf("untyped error: %v", err)
		}
		if err != nil {
			return
		}
		// Accepted: the header must hold our v1 signature of exactly this
		// id, timestamp and body.
		ts, perr := strconv.ParseInt(timestamp, 10, 64)
		if perr != nil {
			t.Fatalf("accepted an unparsable timestamp %q", timestamp)
		}
		want := "v1," + b64(mac(mustKey(t), id, timestamp, body))
		if !containsField(signature, want) {
			t.Fatalf("accepted %q for id %q ts %d", signature, id, ts)
		}
	})
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func mustKey(t *testing.T) []byte {
	t.Helper()
	key, err := decodeSecret(testSecret)
	require.NoError(t, err)
	return key
}

// containsField reports whether the space-separated list s holds field.
func containsField(s, field string) bool {
	for _, f := range strings.Fields(s) {
		if f == field {
			return true
		}
	}
	return false
}
