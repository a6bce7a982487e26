// Package localpg starts a private PostgreSQL server from the server
// binaries installed on this machine. `mio dev` uses it for its embedded
// database and the test harness for its throwaway cluster. When the
// process runs as root it runs PostgreSQL as an unprivileged OS user
// (postgres, else nobody), because initdb and postgres refuse root.
package localpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotInstalled is returned when no PostgreSQL server binaries are found.
var ErrNotInstalled = errors.New("PostgreSQL server binaries (initdb, postgres) not found in PATH or /usr/lib/postgresql/*/bin: install the PostgreSQL server package (Debian/Ubuntu: apt-get install postgresql)")

// Options configure a local server.
type Options struct {
	// DataDir is the cluster directory (PGDATA). Created and initialised
	// on first use, reused after.
	DataDir string
	// Port to listen on, on 127.0.0.1. Zero picks a free port.
	Port int
	// Password for the superuser "postgres". Empty means trust
	// authentication on loopback (tests only).
	Password string
	// Settings are extra server settings (name -> value).
	Settings map[string]string
	// Log receives the server's log output. Nil discards it.
	Log io.Writer
	// KillWithParent makes the kernel stop the server when this process
	// dies (Linux), so a crash of the parent leaves no server behind.
	KillWithParent bool
}

// Server is a running local PostgreSQL.
type Server struct {
	opts    Options
	port    int
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// FindBinDir returns the directory holding initdb and postgres: PATH first,
// then the newest /usr/lib/postgresql/*/bin.
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // e.g. /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return versionOf(matches[i]) > versionOf(matches[j]) })
	for _, m := range matches {
		dir := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	return "", ErrNotInstalled
}

func versionOf(path string) int {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p == "postgresql" && i+1 < len(parts) {
			n, _ := strconv.Atoi(parts[i+1])
			return n
		}
	}
	return 0
}

// Start initialises the cluster if needed and starts the server, waiting
// until it accepts connections.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	opts.DataDir = dataDir
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	if cred != nil {
		if err := chownTree(dataDir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
		// Every parent must be traversable by the server's user.
		if err := ensureTraversable(filepath.Dir(dataDir)); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initdb(ctx, bin, opts, cred); err != nil {
			return nil, err
		}
	}
	if err := clearStalePID(dataDir); err != nil {
		return nil, err
	}
	port := opts.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	args := []string{"-D", dataDir, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "logging_collector=off"}
	keys := make([]string, 0, len(opts.Settings))
	for k := range opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+opts.Settings[k])
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if opts.KillWithParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &Server{opts: opts, port: port, cmd: cmd, done: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.done) }()
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		_ = s.Stop(context.Background())
		return nil, err
	}
	return s, nil
}

// Port is the TCP port the server listens on (127.0.0.1).
func (s *Server) Port() int { return s.port }

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// URL returns a connection URL for database db as the superuser.
func (s *Server) URL(db string) string {
	auth := "postgres"
	if s.opts.Password != "" {
		auth += ":" + urlEscape(s.opts.Password)
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", auth, s.port, db)
}

// Done is closed when the server process exits.
func (s *Server) Done() <-chan struct{} { return s.done }

func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited during start-up: %v (see its log)", s.waitErr)
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, s.URL("postgres"))
		cancel()
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres did not accept connections within %s: %w", limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts the server down (fast shutdown: clients disconnected,
// everything committed is kept) and waits for it to exit.
func (s *Server) Stop(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.done:
		return nil
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return errors.New("postgres did not stop in time; killed")
	}
}

func initdb(ctx context.Context, bin string, opts Options, cred *syscall.Credential) error {
	args := []string{"-D", opts.DataDir, "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"}
	var pwfile string
	if opts.Password != "" {
		f, err := os.CreateTemp(filepath.Dir(opts.DataDir), ".pwfile-*")
		if err != nil {
			return err
		}
		pwfile = f.Name()
		defer os.Remove(pwfile)
		if _, err := f.WriteString(opts.Password + "\n"); err != nil {
			f.Close()
			return err
		}
		f.Close()
		if cred != nil {
			if err := os.Chown(pwfile, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
		args = append(args, "--auth=scram-sha-256", "--pwfile="+pwfile)
	} else {
		args = append(args, "--auth=trust")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb %s: %w: %s", opts.DataDir, err, lastLines(string(out), 5))
	}
	return nil
}

// runAs returns the credential to run PostgreSQL with: nil when this
// process is not root, else the postgres user (or nobody).
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no unprivileged user (postgres or nobody) exists to run PostgreSQL")
}

func chownTree(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func ensureTraversable(dir string) error {
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("make %s traversable for the postgres user: %w", d, err)
			}
		}
	}
	return nil
}

// clearStalePID removes postmaster.pid when the process it names is gone
// (a previous run was killed), so the server can start.
func clearStalePID(dataDir string) error {
	pidFile := filepath.Join(dataDir, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if pid > 0 && syscall.Kill(pid, 0) == nil {
		return fmt.Errorf("a PostgreSQL server (pid %d) is already running on %s; stop it first", pid, dataDir)
	}
	return os.Remove(pidFile)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func urlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '-' || r == '_' || r == '.' || r == '~' {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "%%%02X", r)
		}
	}
	return b.String()
}
