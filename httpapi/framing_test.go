package httpapi_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/httpapi"
)

// framingServer serves, behind GuardFraming, a handler that reads the
// whole body and answers "<path> <body length>".
func framingServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, r.URL.Path+" "+itoa(len(b)))
	})}
	go func() { _ = srv.Serve(httpapi.GuardFraming(ln, nil)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// exchange writes raw on a new connection and reads until the server
// closes it.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	out, err := io.ReadAll(c)
	require.NoError(t, err, "the server closes the connection; got so far:\n%s", out)
	return string(out)
}

// next is the pipelined request after each case; it closes the
// connection once answered.
const next = "GET /second HTTP/1.1\r\nHost: mio\r\nConnection: close\r\n\r\n"

// TestRequestSmugglingRejected: a request whose length is ambiguous —
// Transfer-Encoding with Content-Length in any form, Transfer-Encoding on
// HTTP/1.0, a folded header — is answered 400 with Connection: close and
// the request pipelined after it gets no answer; well-framed requests
// (Content-Length, chunked, trailers, bodies that look like heads) are
// all answered on one connection.
func TestRequestSmugglingRejected(t *testing.T) {
	t.Parallel()
	addr := framingServer(t)
	rejected := []struct{ name, head string }{
		{"chunked and Content-Length", "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
		{"Content-Length then chunked", "POST /first HTTP/1.1\r\nHost: mio\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"lower case names", "POST /first HTTP/1.1\r\nhost: mio\r\ntransfer-encoding: CHUNKED\r\ncontent-length: 5\r\n\r\n0\r\n\r\n"},
		{"chunked, identity and Content-Length", "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked, identity\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
		{"identity and Content-Length", "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: identity\r\nContent-Length: 0\r\n\r\n"},
		{"two Transfer-Encodings and Content-Length", "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
		{"Content-Length 0 with chunked", "POST /first HTTP/1.1\r\nHost: mio\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"space before the value", "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding:\tchunked \r\nContent-Length:  5\r\n\r\n0\r\n\r\n"},
		{"bare LF line ends", "POST /first HTTP/1.1\nHost: mio\nTransfer-Encoding: chunked\nContent-Length: 5\n\n0\r\n\r\n"},
		{"HTTP/1.0 with chunked", "POST /first HTTP/1.0\r\nHost: mio\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"HTTP/1.0 with chunked and Content-Length", "POST /first HTTP/1.0\r\nHost: mio\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
		{"folded Transfer-Encoding", "POST /first HTTP/1.1\r\nHost: mio\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"},
		{"folded other header", "POST /first HTTP/1.1\r\nHost: mio\r\nX-Note: a\r\n\tb\r\nContent-Length: 0\r\n\r\n"},
		{"after a POST's stray CRLF", "POST /zeroth HTTP/1.1\r\nHost: mio\r\nContent-Length: 3\r\n\r\nabc\r\n" +
			"POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
		{"after a well-framed request", "POST /zeroth HTTP/1.1\r\nHost: mio\r\nContent-Length: 3\r\n\r\nabc" +
			"POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := exchange(t, addr, tc.head+next)
			if strings.Contains(tc.head, "/zeroth") {
				require.True(t, strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n"), out)
				require.Contains(t, out, "/zeroth 3")
				out = out[strings.Index(out, "/zeroth 3")+len("/zeroth 3"):]
			}
			require.True(t, strings.HasPrefix(out, "HTTP/1.1 400 Bad Request\r\n"), out)
			require.Contains(t, out, "\r\nConnection: close\r\n")
			require.Equal(t, 1, strings.Count(out, "HTTP/1.1 "), "one answer, then the connection is closed:\n%s", out)
			require.NotContains(t, out, "/first")
			require.NotContains(t, out, "/second")
		})
	}

	answered := []struct{ name, head, want string }{
		{"Content-Length", "POST /first HTTP/1.1\r\nHost: mio\r\nContent-Length: 5\r\n\r\nhello", "/first 5"},
		{"no body", "GET /first HTTP/1.1\r\nHost: mio\r\n\r\n", "/first 0"},
		{"chunked", "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n", "/first 11"},
		{"chunked with a trailer", "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\n", "/first 3"},
		{"a body that looks like a head", "POST /first HTTP/1.1\r\nHost: mio\r\nContent-Length: 65\r\n\r\n" +
			"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", "/first 65"},
		{"stray CRLF after a POST", "POST /first HTTP/1.1\r\nHost: mio\r\nContent-Length: 1\r\n\r\nx\r\n", "/first 1"},
		{"a chunk that looks like a head", "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"31\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n\r\n0\r\n\r\n", "/first 49"},
	}
	for _, tc := range answered {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := exchange(t, addr, tc.head+next)
			require.Equal(t, 2, strings.Count(out, "HTTP/1.1 200 OK"), out)
			require.Contains(t, out, tc.want)
			require.Contains(t, out, "/second 0")
		})
	}

	// A chunked body net/http would find malformed ends the connection
	// there: what follows is never read as a request.
	for _, body := range []string{"3\r\nabcXX", "zz\r\n", "3\nabc\r\n", "00000000000000003\r\nabc\r\n"} {
		out := exchange(t, addr, "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\n\r\n"+body+"0\r\n\r\n"+next)
		require.LessOrEqual(t, strings.Count(out, "HTTP/1.1 "), 1, "%q: %s", body, out)
		require.NotContains(t, out, "/second", "%q", body)
	}

	// Byte by byte: heads held until complete still frame the same.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	raw := "POST /first HTTP/1.1\r\nHost: mio\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + next
	for i := range len(raw) {
		_, err := c.Write([]byte{raw[i]})
		require.NoError(t, err)
	}
	out, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Contains(t, string(out), "/first 3")
	require.Contains(t, string(out), "/second 0")
}
