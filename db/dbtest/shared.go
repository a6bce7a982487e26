package dbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db/localpg"
)

// The shared cluster lives in one directory per OS user. Test processes
// hold a shared flock on users.lock for their lifetime; the supervisor
// process (started by whichever test process found no server) owns the
// PostgreSQL process and stops it once nobody holds users.lock. setup.lock
// serializes start-up and shut-down.
const supervisorEnv = "MIO_DBTEST_SUPERVISOR"

type serverInfo struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

func sharedDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("mio-dbtest-%d", os.Getuid()))
}

func localAvailable() bool {
	_, err := localpg.FindBinDir()
	return err == nil
}

// usersLock is held (shared) until the process exits.
var usersLock *os.File

func sharedLocalServer(ctx context.Context) (string, error) {
	dir := sharedDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	_ = os.Chmod(dir, 0o755)
	setup, err := lockFile(filepath.Join(dir, "setup.lock"), syscall.LOCK_EX)
	if err != nil {
		return "", err
	}
	defer setup.Close() // releases the lock
	if usersLock == nil {
		usersLock, err = lockFile(filepath.Join(dir, "users.lock"), syscall.LOCK_SH)
		if err != nil {
			return "", err
		}
	}
	if info, ok := readInfo(dir); ok && ping(ctx, info.URL) == nil {
		return info.URL, nil
	}
	_ = os.Remove(filepath.Join(dir, "server.json"))
	// Start a supervisor: this test binary again, in supervisor mode.
	logf, err := os.OpenFile(filepath.Join(dir, "supervisor.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), supervisorEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", fmt.Errorf("dbtest: start supervisor: %w", err)
	}
	logf.Close()
	go func() { _ = cmd.Wait() }() // reap if it exits while we run
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if info, ok := readInfo(dir); ok {
			if err := ping(ctx, info.URL); err == nil {
				return info.URL, nil
			}
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "supervisor.log"))
	return "", fmt.Errorf("dbtest: the local PostgreSQL did not start: %s", tail(string(log), 600))
}

// supervise runs in the re-executed test binary: it owns the server and
// stops it when no test process remains.
func supervise(dir string) int {
	ctx := context.Background()
	dataDir := filepath.Join(dir, "data")
	_ = os.RemoveAll(dataDir)
	logf, _ := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	srv, err := localpg.Start(ctx, localpg.Options{
		DataDir:        dataDir,
		Log:            logf,
		KillWithParent: true,
		Settings: map[string]string{
			"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
			"max_connections": "500", "shared_buffers": "128MB", "max_locks_per_transaction": "256",
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dbtest supervisor:", err)
		return 1
	}
	info := serverInfo{URL: srv.URL("postgres"), PID: srv.PID()}
	b, _ := json.Marshal(info)
	tmp := filepath.Join(dir, "server.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		_ = os.Rename(tmp, filepath.Join(dir, "server.json"))
	}
	idleSince := time.Time{}
	for {
		select {
		case <-srv.Done():
			_ = os.Remove(filepath.Join(dir, "server.json"))
			return 1
		case <-time.After(500 * time.Millisecond):
		}
		setup, err := lockFile(filepath.Join(dir, "setup.lock"), syscall.LOCK_EX)
		if err != nil {
			continue
		}
		users, err := lockFile(filepath.Join(dir, "users.lock"), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			idleSince = time.Time{}
			setup.Close()
			continue
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if time.Since(idleSince) < 3*time.Second {
			users.Close()
			setup.Close()
			continue
		}
		_ = os.Remove(filepath.Join(dir, "server.json"))
		_ = srv.Stop(ctx)
		_ = os.RemoveAll(dataDir)
		users.Close()
		setup.Close()
		return 0
	}
}

func lockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func readInfo(dir string) (serverInfo, bool) {
	var info serverInfo
	b, err := os.ReadFile(filepath.Join(dir, "server.json"))
	if err != nil || json.Unmarshal(b, &info) != nil || info.URL == "" {
		return info, false
	}
	return info, true
}

func ping(ctx context.Context, url string) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, url)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	if s == "" {
		return errors.New("no log").Error()
	}
	return s
}
