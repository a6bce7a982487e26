package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/db/localpg"
	"github.com/miohq/mio/migrations"
)

// chaosCluster is a PostgreSQL of the chaos test's own (the shared test
// cluster cannot be crash-restarted under the other tests), migrated,
// optionally behind a PgBouncer in transaction pooling mode.
type chaosCluster struct {
	opts localpg.Options
	mu   sync.Mutex
	pg   *localpg.Server
	pgb  *localpg.PgBouncer

	ownerURL string // direct, superuser: fixtures, checks, LISTEN
	poolURL  string // what mio serve's pool uses: ownerURL or through PgBouncer
}

func startChaosCluster(t *testing.T, pooled bool) *chaosCluster {
	t.Helper()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "mio-chaos-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &chaosCluster{opts: localpg.Options{DataDir: filepath.Join(dir, "pg"), KillWithParent: true, Log: io.Discard,
		Settings: map[string]string{"max_connections": "300", "fsync": "off"}}}
	c.pg, err = localpg.Start(ctx, c.opts)
	require.NoError(t, err)
	c.opts.Port = c.pg.Port() // a restart comes back on the same port
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.pgb != nil {
			c.pgb.Stop()
		}
		_ = c.pg.Stop(context.Background())
	})

	admin, err := db.Open(ctx, c.pg.URL("postgres"), db.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE chaos")
	admin.Close()
	require.NoError(t, err)
	c.ownerURL = c.pg.URL("chaos")
	owner, err := db.Open(ctx, c.ownerURL, db.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	defer owner.Close()
	_, err = migrations.New(owner).Up(ctx)
	require.NoError(t, err)
	c.poolURL = c.ownerURL
	if pooled {
		require.NoError(t, dbtest.CreatePooledRole(ctx, owner))
		c.pgb, err = localpg.StartPgBouncer(ctx, dbtest.BouncerOptions(filepath.Join(dir, "pgbouncer"), c.pg.Port()))
		require.NoError(t, err)
		c.poolURL = c.pgb.URL("chaos", dbtest.PooledRole) + "&default_query_exec_mode=cache_describe"
	}
	return c
}

// crash stops PostgreSQL the way `pg_ctl stop -m immediate` does (SIGQUIT
// to the postmaster: no checkpoint, crash recovery at the next start) and
// starts it again on the same port.
func (c *chaosCluster) crash(ctx context.Context) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	begin := time.Now()
	if err := syscall.Kill(c.pg.PID(), syscall.SIGQUIT); err != nil {
		return 0, fmt.Errorf("immediate stop: %w", err)
	}
	select {
	case <-c.pg.Done():
	case <-time.After(30 * time.Second):
		return 0, fmt.Errorf("postgres did not stop within 30s")
	}
	pg, err := localpg.Start(ctx, c.opts)
	if err != nil {
		return 0, fmt.Errorf("restart after immediate stop: %w", err)
	}
	c.pg = pg
	return time.Since(begin), nil
}

// chaosProc is one `mio serve --role …` process, killed and restarted at
// will on the same addresses.
type chaosProc struct {
	name, role string
	env        []string
	public     string // base URL of the public listener (role api)
	ready      string // URL of its /readyz
	mu         sync.Mutex
	cmd        *exec.Cmd
	out        *lockedBuffer
	starts     int
	failed     []string // why starts failed (the output's end)
}

func newChaosProc(t *testing.T, name, role string, env []string) *chaosProc {
	public := "127.0.0.1:" + strconv.Itoa(freePort(t))
	adminAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p := &chaosProc{name: name, role: role, public: "http://" + public,
		env: append(append([]string(nil), env...), "MIO_HTTP_ADDR="+public, "MIO_ADMIN_ADDR="+adminAddr)}
	p.ready = "http://" + adminAddr + "/readyz"
	if role == "api" {
		p.ready = "http://" + public + "/readyz"
	}
	return p
}

// start starts the process and waits until it is ready; a process that
// exits during start-up (the database is down) is started again, for up
// to limit.
func (p *chaosProc) start(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		p.mu.Lock()
		cmd := exec.Command(mioBin, "serve", "--role", p.role)
		cmd.Env = append(baseEnv(), p.env...)
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		err := cmd.Start()
		if err == nil {
			p.cmd, p.out = cmd, out
			p.starts++
		}
		p.mu.Unlock()
		if err != nil {
			return err
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		ready := p.waitReady(exited, deadline)
		if ready {
			p.mu.Lock()
			p.cmd = cmd
			p.mu.Unlock()
			return nil
		}
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		tail := out.String()
		if len(tail) > 400 {
			tail = tail[len(tail)-400:]
		}
		p.mu.Lock()
		p.failed = append(p.failed, tail)
		p.mu.Unlock()
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not become ready within %s: %s", p.name, limit, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *chaosProc) waitReady(exited <-chan struct{}, deadline time.Time) bool {
	client := chaosHTTP(time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		resp, err := client.Get(p.ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// kill sends SIGKILL and reaps the process.
func (p *chaosProc) kill() {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	for i := 0; i < 200 && syscall.Kill(cmd.Process.Pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond) // reaped by start's waiter
	}
}
