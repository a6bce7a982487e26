package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRawProviderSpeaksToNetHTTP: the fake provider answers what Go's
// HTTP client (MIO's webhook sender) writes — bodies with a length and
// chunked, on one kept-alive connection — delivers each body whole when
// asked, and refuses what it cannot read with a 400 and an error.
func TestRawProviderSpeaksToNetHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []string
	var keep atomic.Bool
	keep.Store(true)
	p, err := newRawProvider(func(body []byte, _ time.Time) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(body))
	}, keep.Load)
	require.NoError(t, err)
	defer p.close()

	var dials atomic.Int32
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	url := "http://" + p.addr() + "/hook"
	big := strings.Repeat("x", 100_000) // past the reader's buffer
	for _, body := range []io.Reader{strings.NewReader(`{"a":1}`), io.MultiReader(strings.NewReader(big)), bytes.NewReader(nil)} {
		resp, err := client.Post(url, "application/json", body)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	require.Equal(t, int32(1), dials.Load(), "one kept-alive connection")
	mu.Lock()
	require.Equal(t, []string{`{"a":1}`, big, ""}, got)
	mu.Unlock()
	require.NoError(t, p.err())

	// Bodies skipped when not tracking: delivered as nil.
	keep.Store(false)
	resp, err := client.Post(url, "application/json", strings.NewReader(`{"b":2}`))
	require.NoError(t, err)
	resp.Body.Close()
	mu.Lock()
	require.Equal(t, "", got[len(got)-1])
	mu.Unlock()

	// A request it cannot read: 400, the connection closed, the error kept.
	c, err := net.Dial("tcp", p.addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n"))
	require.NoError(t, err)
	answer, _ := io.ReadAll(c)
	require.True(t, strings.HasPrefix(string(answer), "HTTP/1.1 400 "), "%q", answer)
	require.ErrorContains(t, p.err(), "Content-Length")
}
