package fetch

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bodyServer serves bodies that end in every way a download can end.
func bodyServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/whole", func(w http.ResponseWriter, r *http.Request) {
		// Chunked, in two flushed pieces, then the terminating chunk.
		w.(http.Flusher).Flush()
		io.WriteString(w, "hello, ")
		w.(http.Flusher).Flush()
		io.WriteString(w, "world")
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		// Chunked: three bytes, then nothing until the client goes away;
		// returning then makes the server send the terminating chunk.
		io.WriteString(w, "abc")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, strings.Repeat("s", 10))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("r", 10))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0) // close with RST
			conn.Close()
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBodyEndsOnlyWhenWhole: only a body that arrived whole ends with
// io.EOF; a cut by the timeout, a reset or a short body is ErrIncomplete.
func TestBodyEndsOnlyWhenWhole(t *testing.T) {
	t.Parallel()
	srv := bodyServer(t)
	p := Policy{AllowHTTP: true, AllowedNets: loopback, Timeout: 300 * time.Millisecond}
	for _, tc := range []struct {
		name, path string
		want       string // body, when whole
		errs       []error
		text       string
	}{
		{name: "chunked whole", path: "/whole", want: "hello, world"},
		{name: "chunked cut by the timeout", path: "/stall", errs: []error{ErrIncomplete, ErrTimeout}, text: "timed out after 300ms, 3 bytes read"},
		{name: "short of Content-Length", path: "/short", errs: []error{ErrIncomplete, io.ErrUnexpectedEOF}, text: "10 of 100 bytes"},
		{name: "connection reset", path: "/reset", errs: []error{ErrIncomplete}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, err := NewClient(p).Get(context.Background(), srv.URL+tc.path, nil)
			require.NoError(t, err)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, resp.Body.Close())
			if tc.errs == nil {
				require.NoError(t, err)
				require.Equal(t, tc.want, string(got))
				return
			}
			for _, e := range tc.errs {
				require.ErrorIs(t, err, e)
			}
			require.NotErrorIs(t, err, ErrTooLarge)
			require.Contains(t, err.Error(), tc.text)
			_, again := resp.Body.Read(make([]byte, 1))
			require.ErrorIs(t, again, ErrIncomplete, "sticky")
		})
	}
}

// TestBodyFinishedAfterTimeoutIsIncomplete: a server that completes a
// chunked body only once the client has given up (here: when the client
// half-closes, as a TLS client's close_notify lets it) still delivers that
// ending to the pending read; net/http then reports a clean io.EOF after
// the deadline, which must not pass for a whole body.
func TestBodyFinishedAfterTimeoutIsIncomplete(t *testing.T) {
	t.Parallel()
	srv := bodyServer(t)
	c := NewClient(Policy{AllowHTTP: true, AllowedNets: loopback, Timeout: 300 * time.Millisecond})
	tr := c.hc.Transport.(*http.Transport)
	dial := tr.DialContext
	var lingered atomic.Int32
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &lingeringConn{TCPConn: conn.(*net.TCPConn), readBack: make(chan struct{}, 1), lingered: &lingered}, nil
	}

	resp, err := c.Get(context.Background(), srv.URL+"/stall", nil)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, int32(1), lingered.Load(), "the server's ending reached the read after the deadline")
	require.Equal(t, "abc", string(got))
	require.ErrorIs(t, err, ErrIncomplete)
	require.ErrorIs(t, err, ErrTimeout)
}

// lingeringConn closes the way a TLS connection does: it first tells the
// server it is done (a half-close, standing for close_notify), lets the
// read in progress see what the server sends back, and only then closes.
type lingeringConn struct {
	*net.TCPConn
	closing  atomic.Bool
	readBack chan struct{}
	lingered *atomic.Int32
}

func (c *lingeringConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if c.closing.Load() {
		select {
		case c.readBack <- struct{}{}:
		default:
		}
	}
	return n, err
}

func (c *lingeringConn) Close() error {
	if !c.closing.Swap(true) {
		_ = c.CloseWrite()
		select {
		case <-c.readBack:
			c.lingered.Add(1)
		case <-time.After(5 * time.Second):
		}
	}
	return c.TCPConn.Close()
}

// TestWholeBodyChecksContentLength: a transport that reports io.EOF short
// of (or past) the declared length does not make the body whole.
func TestWholeBodyChecksContentLength(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want int64
		ok   bool
	}{{"0123456789", 10, true}, {"0123456789", -1, true}, {"", 0, true}, {"01234", 10, false}, {"0123456789", 5, false}} {
		ctx, cancel := context.WithCancel(context.Background())
		b := &wholeBody{rc: io.NopCloser(strings.NewReader(tc.body)), ctx: ctx, cancel: cancel, host: "h", want: tc.want}
		got, err := io.ReadAll(b)
		require.NoError(t, b.Close())
		require.Equal(t, tc.body, string(got), "%+v", tc)
		if tc.ok {
			require.NoError(t, err, "%+v", tc)
		} else {
			require.ErrorIs(t, err, ErrIncomplete, "%+v", tc)
			require.False(t, errors.Is(err, ErrTimeout), "%+v", tc)
		}
	}

	// The caller's context ending before the body's end: incomplete too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := &wholeBody{rc: io.NopCloser(strings.NewReader("abc")), ctx: ctx, cancel: cancel, host: "h", want: -1}
	_, err := io.ReadAll(b)
	require.ErrorIs(t, err, ErrIncomplete)
	require.ErrorIs(t, err, context.Canceled)
}
