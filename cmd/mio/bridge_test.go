package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
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
		done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), nil, nil, func(_, a string) { admin <- a })
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

// TestBridgeKill9Failover runs two `mio serve --role bridge` processes,
// kills the publishing one with SIGKILL mid-stream, keeps ingesting, and
// checks that the stream holds every message exactly once (once on
// mio.inbound, once on mio.inbound_enriched): the standby took over where
// the position stood and the duplicate window dropped what the killed one
// had published past it.
func TestBridgeKill9Failover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	svc := admin.New(env.Pool, nil, "http://x")
	tenant, _, err := svc.TenantCreate(ctx, "kill9")
	require.NoError(t, err)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook"})
	require.NoError(t, err)
	owner := env.OwnerPool(t)
	insert := func(n int) {
		_, err := owner.Exec(ctx, fmt.Sprintf(`
			INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, source_message_id, conversation_id, state, envelope, received_at, ready_xid, ready_seq, ready_at)
			SELECT '%[1]s', id, '%[2]s', 'webhook', 'k-' || id, 'c', 'ready',
			       jsonb_build_object('id', id, 'tenant_id', '%[1]s', 'account_id', '%[2]s', 'channel_type', 'webhook',
			         'source_message_id', 'k-' || id, 'conversation', jsonb_build_object('id', 'c', 'type', 'dm'),
			         'sender', jsonb_build_object('id', 'u1'), 'text', 'hi'),
			       now(), pg_current_xact_id(), nextval('mio.inbox_ready_seq'), now()
			FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, %[3]d)) AS g`, tenant.ID, acct.ID, n))
		require.NoError(t, err)
	}
	insert(10_000)

	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	t.Cleanup(ns.Shutdown)
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", ns.Addr().(*net.TCPAddr).Port)
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	count := func() uint64 {
		s, err := js.Stream(ctx, "MIO")
		if err != nil {
			return 0
		}
		info, err := s.Info(ctx)
		if err != nil {
			return 0
		}
		return info.State.Msgs
	}

	start := func() *exec.Cmd {
		cmd := exec.Command(mioBin, "serve", "--role", "bridge")
		cmd.Env = append(baseEnv(), "MIO_DATABASE_URL="+env.OwnerURL, "MIO_NATS_URL="+natsURL,
			"MIO_ADMIN_ADDR=127.0.0.1:0", "MIO_LOG_LEVEL=error")
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		return cmd
	}
	first := start()
	require.Eventually(t, func() bool { return count() >= 1000 }, 60*time.Second, 5*time.Millisecond)
	second := start()
	t.Cleanup(func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() })
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	t.Logf("killed the first bridge with %d of 20000 events in the stream", count())
	insert(1_000)

	const want = 2 * 11_000
	require.Eventually(t, func() bool { return count() >= want }, 120*time.Second, 20*time.Millisecond)
	s, err := js.Stream(ctx, "MIO")
	require.NoError(t, err)
	seen := map[string]int{}
	for seq := uint64(1); seq <= want; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		seen[m.Header.Get(jetstream.MsgIDHeader)]++
	}
	require.Len(t, seen, want, "every event once")
	require.Equal(t, uint64(want), count(), "no duplicate stored")
	var inbox int
	require.NoError(t, owner.QueryRow(ctx, "SELECT count(*) FROM mio.inbox").Scan(&inbox))
	require.Equal(t, want/2, inbox)
}

// TestAdminTenantNATS: the opt-out is set from the command line.
func TestAdminTenantNATS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	tenant, _, err := admin.New(env.Pool, nil, "http://x").TenantCreate(ctx, "optout")
	require.NoError(t, err)
	publish := func() bool {
		var p bool
		require.NoError(t, db.InTenantTx(ctx, env.Pool, tenant.ID, func(tx pgx.Tx) error {
			p, err = db.BridgePublishGet(ctx, tx, tenant.ID)
			return err
		}))
		return p
	}
	require.True(t, publish(), "published by default")
	dbURL := []string{"MIO_DATABASE_URL=" + env.OwnerURL}
	r := runMio(t, dbURL, "admin", "tenant", "nats", "--tenant", tenant.ID.String(), "off")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"tenant_id":"`+tenant.ID.String()+`","nats_publish":false}`, r.stdout)
	require.False(t, publish())
	r = runMio(t, dbURL, "admin", "tenant", "nats", "--tenant", tenant.ID.String(), "on")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, publish())
	r = runMio(t, dbURL, "admin", "tenant", "nats", "--tenant", tenant.ID.String(), "maybe")
	require.Equal(t, 2, r.code)
	r = runMio(t, dbURL, "admin", "tenant", "nats", "--tenant", uuid.NewString(), "off")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "no such tenant")
}
