package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
)

// streamServer is a fake of the stream routes: it takes appends in seq
// order as the server does (a repeated seq answered as before, a gap
// 409) and answers the first try of the second append 503.
type streamServer struct {
	mu       sync.Mutex
	id       uuid.UUID
	stream   bool
	seq      int
	text     strings.Builder
	finished *int
	tries    map[int]int
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v1/outbound":
		s.stream = body["stream"] == true
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"id":"`+s.id.String()+`","handoff_state":"queued"}`)
	case strings.HasSuffix(r.URL.Path, "/append"):
		seq := int(body["seq"].(float64))
		s.tries[seq]++
		if seq == 2 && s.tries[seq] == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		switch {
		case seq == s.seq+1:
			s.seq = seq
			s.text.WriteString(body["text_delta"].(string))
		case seq > s.seq+1:
			w.WriteHeader(http.StatusConflict)
			return
		}
		_, _ = io.WriteString(w, `{"id":"`+s.id.String()+`","seq":1,"finished":false}`)
	case strings.HasSuffix(r.URL.Path, "/finish"):
		n := 0
		if v, ok := body["seq"].(float64); ok {
			n = int(v)
		}
		s.finished = &n
		_, _ = io.WriteString(w, `{"id":"`+s.id.String()+`","seq":0,"finished":true}`)
	}
}

// TestSendStream: the helper opens a stream, appends each chunk with the
// next seq (the 503 on the second is retried with the same seq, taken
// once), and finishes it naming the last seq.
func TestSendStream(t *testing.T) {
	t.Parallel()
	fake := &streamServer{id: uuid.New(), tries: map[int]int{}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c := New(srv.URL, "tok", WithRetry(Retry{Attempts: 3, Base: time.Millisecond}))
	chunks := func(yield func(string, error) bool) {
		for _, s := range []string{"Hello", "", ", ", "world"} {
			if !yield(s, nil) {
				return
			}
		}
	}
	sent, err := c.SendStream(context.Background(), envelope.SendCommand{IdempotencyKey: "k"}, chunks)
	require.NoError(t, err)
	require.Equal(t, fake.id, sent.ID)
	require.True(t, fake.stream)
	require.Equal(t, "Hello, world", fake.text.String())
	require.Equal(t, 2, fake.tries[2], "the second append was retried with its seq")
	require.Equal(t, 3, *fake.finished, "finished naming the last append")
}

// TestSendStreamSourceError: an error from the chunks finishes the stream
// with what was appended and is returned.
func TestSendStreamSourceError(t *testing.T) {
	t.Parallel()
	fake := &streamServer{id: uuid.New(), tries: map[int]int{}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c := New(srv.URL, "tok")
	boom := errors.New("model failed")
	chunks := func(yield func(string, error) bool) {
		if yield("partial", nil) {
			yield("", boom)
		}
	}
	_, err := c.SendStream(context.Background(), envelope.SendCommand{IdempotencyKey: "k"}, chunks)
	require.ErrorIs(t, err, boom)
	require.Equal(t, "partial", fake.text.String())
	require.Equal(t, 1, *fake.finished)
}
