package localpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PgBouncerOptions configure a local PgBouncer in front of a server.
type PgBouncerOptions struct {
	// Dir holds pgbouncer.ini and the auth file; created.
	Dir string
	// UpstreamPort is the PostgreSQL server's port on 127.0.0.1.
	UpstreamPort int
	// Users may log in (trust authentication: tests only).
	Users []string
	// PoolMode is session, transaction or statement. Default transaction.
	PoolMode string
	// IgnoreStartupParameters are client startup parameters PgBouncer
	// accepts and drops (it refuses unknown ones).
	IgnoreStartupParameters []string
	// Log receives PgBouncer's log. Nil discards it.
	Log io.Writer
}

// PgBouncer is a running PgBouncer.
type PgBouncer struct {
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// ErrPgBouncerNotInstalled is returned when no pgbouncer binary is found.
var ErrPgBouncerNotInstalled = errors.New("pgbouncer not found in PATH or /usr/sbin: install it (Debian/Ubuntu: apt-get install pgbouncer)")

// FindPgBouncer returns the pgbouncer binary's path.
func FindPgBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", ErrPgBouncerNotInstalled
}

// StartPgBouncer starts PgBouncer on a free port of 127.0.0.1, pooling
// every database of the server at opts.UpstreamPort, and waits until it
// accepts connections. It runs as the same unprivileged user as
// PostgreSQL when this process is root (PgBouncer refuses root).
func StartPgBouncer(ctx context.Context, opts PgBouncerOptions) (*PgBouncer, error) {
	bin, err := FindPgBouncer()
	if err != nil {
		return nil, err
	}
	if opts.PoolMode == "" {
		opts.PoolMode = "transaction"
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var auth strings.Builder
	for _, u := range opts.Users {
		fmt.Fprintf(&auth, "%q \"\"\n", u)
	}
	// server_login_retry = 2: what docs/deploy.md advises in front of
	// MIO. PgBouncer's default (15 s) refuses every login for 15 s after
	// each failed server login, so a PostgreSQL restart keeps workers off
	// the database (and their heartbeats lost) far longer than the restart.
	ini := fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
max_client_conn = 1000
default_pool_size = 20
server_login_retry = 2
ignore_startup_parameters = %s
logfile =
pidfile =
`, opts.UpstreamPort, port, filepath.Join(dir, "userlist.txt"), opts.PoolMode, strings.Join(opts.IgnoreStartupParameters, ","))
	if err := os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(auth.String()), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644); err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := ensureTraversable(dir); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start pgbouncer: %w", err)
	}
	b := &PgBouncer{port: port, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(b.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			c.Close()
			return b, nil
		}
		select {
		case <-b.done:
			return nil, errors.New("pgbouncer exited at start (pass PgBouncerOptions.Log to see why)")
		case <-ctx.Done():
			b.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Stop()
			return nil, errors.New("pgbouncer did not start within 20s")
		}
	}
}

// URL is a connection URL through PgBouncer to database db as user.
func (b *PgBouncer) URL(db, user string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", urlEscape(user), b.port, urlEscape(db))
}

// Stop stops PgBouncer and waits for it to exit.
func (b *PgBouncer) Stop() {
	_ = b.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}
