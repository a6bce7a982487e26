package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/config"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/ingest"
)

// TestServeAdminAddressInUse: a listener that cannot bind stops mio serve
// with one line naming the listener and the cause, after the other
// listener was already serving.
func TestServeAdminAddressInUse(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	r := runMio(t, []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_LOG_LEVEL=error"},
		"serve", "--http-addr", "127.0.0.1:0", "--admin-addr", taken.Addr().String())
	require.Equal(t, 1, r.code, "stdout=%s stderr=%s", r.stdout, r.stderr)
	msg := strings.TrimRight(r.stderr, "\n")
	require.NotContains(t, msg, "\n", "one line expected, got %q", r.stderr)
	require.Contains(t, msg, "admin listener "+taken.Addr().String())
	require.Contains(t, msg, "address already in use")
}

// errAccept is what acceptFails answers to Accept.
var errAccept = errors.New("accept failed for the test")

// acceptFails is a bound listener whose Accept fails permanently, as when
// the process runs out of file descriptors for good.
type acceptFails struct{ net.Listener }

func (acceptFails) Accept() (net.Conn, error) { return nil, errAccept }

// TestListenerFailureIsReported: a server that stops serving for any reason
// but shutdown reports it (serve then shuts the process down), instead of
// leaving the process running without that listener.
func TestListenerFailureIsReported(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := newListeners(1, slog.New(slog.DiscardHandler))
	defer l.close()
	addr := l.serve("public", acceptFails{ln}, http.NotFoundHandler())
	select {
	case err := <-l.errs:
		require.ErrorIs(t, err, errAccept)
		require.Equal(t, "public listener "+addr+": "+errAccept.Error(), err.Error())
	case <-time.After(10 * time.Second):
		t.Fatal("a listener that stopped serving reported nothing")
	}
}

// TestListenersRefuseAmbiguousFraming: the public and admin listeners
// (both served by listeners.serve) answer a request with both
// Transfer-Encoding and Content-Length 400 and close the connection, so
// the request pipelined after it is never answered.
func TestListenersRefuseAmbiguousFraming(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := newListeners(1, slog.New(slog.DiscardHandler))
	defer l.close()
	addr := l.serve("public", ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "answered "+r.URL.Path)
	}))
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, "POST /v1/outbound HTTP/1.1\r\nHost: mio\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+
		"GET /smuggled HTTP/1.1\r\nHost: mio\r\n\r\n")
	require.NoError(t, err)
	out, err := io.ReadAll(c)
	require.NoError(t, err, "the connection is closed")
	require.True(t, strings.HasPrefix(string(out), "HTTP/1.1 400 Bad Request\r\n"), string(out))
	require.Contains(t, string(out), "Connection: close")
	require.NotContains(t, string(out), "answered")
}

// TestIngestDefaultsAgree: the ingester's own defaults are the measured
// ones that mio serve configures (docs/benchmarks.md), so a caller that
// leaves them zero gets the same group commit as the server.
func TestIngestDefaultsAgree(t *testing.T) {
	t.Parallel()
	cfg, _, err := config.Load("serve", nil, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	require.Equal(t, ingest.DefaultFlushers, cfg.IngestFlushers)
	require.Equal(t, ingest.DefaultBurstFlushers, cfg.IngestBurstFlushers)
	require.Equal(t, ingest.DefaultWindow, cfg.IngestWindow)
}
