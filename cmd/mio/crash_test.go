package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db/dbtest"
)

// TestCrashConsistency kills `mio serve` with SIGKILL in the middle of a
// webhook load and restarts it: every webhook answered 200 is stored, and
// nothing answered otherwise is half-written (a dedup key without its
// message, or the reverse).
func TestCrashConsistency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	f := newWebhookFixture(t, env, "crash")

	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	serverEnv := []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + f.masterKey,
		"MIO_HTTP_ADDR=" + addr, "MIO_ADMIN_ADDR=127.0.0.1:0", "MIO_LOG_LEVEL=error"}
	start := func() *exec.Cmd {
		cmd := exec.Command(mioBin, "serve")
		cmd.Env = append(baseEnv(), serverEnv...)
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		waitReady(t, "http://"+addr, out)
		return cmd
	}
	send := func(client *http.Client, id string) (int, error) { return f.send(client, "http://"+addr, id, id) }

	server := start()
	var (
		mu      sync.Mutex
		ok      = map[string]bool{}
		notOK   = map[string]bool{}
		counter atomic.Int64
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 5 * time.Second}
			for i := 0; !stop.Load(); i++ {
				id := fmt.Sprintf("crash_%d_%d", w, i)
				status, err := send(client, id)
				counter.Add(1)
				mu.Lock()
				if err == nil && status == http.StatusOK {
					ok[id] = true
				} else {
					notOK[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for counter.Load() < 400 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, server.Process.Signal(syscall.SIGKILL))
	_ = server.Wait()
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	require.NotEmpty(t, ok)
	require.NotEmpty(t, notOK, "the kill must interrupt requests")

	server = start()
	defer func() { _ = server.Process.Signal(syscall.SIGTERM); _ = server.Wait() }()

	owner := env.OwnerPool(t) // the owner (superuser in tests) sees every row
	stored := map[string]bool{}
	rows, err := owner.Query(ctx, "SELECT source_message_id FROM mio.inbox")
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		stored[s] = true
	}
	require.NoError(t, rows.Err())
	for id := range ok {
		require.True(t, stored[id], "webhook %s was answered 200 but is missing", id)
	}
	var orphans int
	require.NoError(t, owner.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM mio.inbound_dedup d WHERE NOT EXISTS (SELECT 1 FROM mio.inbox i WHERE i.id = d.message_id))
		     + (SELECT count(*) FROM mio.inbox i WHERE NOT EXISTS (SELECT 1 FROM mio.inbound_dedup d WHERE d.message_id = i.id))`).Scan(&orphans))
	require.Zero(t, orphans, "half-written webhooks")

	// The platform redelivers whatever was not acknowledged: each is then
	// stored exactly once.
	client := &http.Client{Timeout: 5 * time.Second}
	for id := range notOK {
		status, err := send(client, id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
	}
	var total int
	require.NoError(t, owner.QueryRow(ctx, "SELECT count(*) FROM mio.inbox").Scan(&total))
	require.Equal(t, len(ok)+len(notOK), total)
	t.Logf("answered 200: %d, interrupted: %d", len(ok), len(notOK))
}

// freePort returns a port of 127.0.0.1 for a process the test starts
// (and may restart on the same port). It is drawn from below the kernel's
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), so that no
// listener on port 0 and no outgoing connection — of this test or of the
// tests and servers running beside it — can take it between the check and
// the process binding it (a port picked on :0 and released had gone to a
// test's NATS server: "api2 did not become ready"). A port handed out is
// not handed out again in this test binary.
func freePort(t *testing.T) int {
	t.Helper()
	low := ephemeralLow()
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 1000 {
		p := low - 1 - rand.IntN(min(12_000, low-1025))
		if freePorts.given[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		freePorts.given[p] = true
		return p
	}
	t.Fatalf("no free port below %d", low)
	return 0
}

// freePorts are the ports freePort handed out.
var freePorts = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				return n
			}
		}
	}
	return 32768
}

func waitReady(t *testing.T, base string, out *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server not ready: %s", out.String())
}
