package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db/dbtest"
)

// TestServeBridgeReadyzReportsNATSDown: a bridge-only process starts
// while NATS is down (the backlog waits in PostgreSQL) and its /readyz
// says why it is not ready.
func TestServeBridgeReadyzReportsNATSDown(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	natsAddr := closed.Addr().String()
	require.NoError(t, closed.Close()) // nothing listens there

	cfg, _, err := loadConfig("serve", []string{"--role", "bridge", "--admin-addr", "127.0.0.1:0"},
		func(k string) string {
			return map[string]string{"MIO_DATABASE_URL": env.OwnerURL, "MIO_NATS_URL": "nats://" + natsAddr}[k]
		}, io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	admin := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), func(_, a string) { admin <- a })
	}()
	addr := <-admin
	resp, err := http.Get("http://" + addr + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), "nats_unavailable")
	cancel()
	require.NoError(t, <-done)
}

// TestServeBridgeNeedsNATSURL: --role bridge without MIO_NATS_URL would
// do nothing; it is refused.
func TestServeBridgeNeedsNATSURL(t *testing.T) {
	t.Parallel()
	r := runMio(t, []string{"MIO_DATABASE_URL=postgres://localhost/x"}, "serve", "--role", "bridge")
	require.Equal(t, 2, r.code, "stderr=%s", r.stderr)
	require.Contains(t, r.stderr, "MIO_NATS_URL is required")
}
