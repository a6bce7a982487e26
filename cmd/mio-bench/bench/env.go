// Package bench holds MIO's benchmarks (`mio-bench …`). Each starts or
// targets a real server and database, drives load from this process, and
// prints its figures next to a reference measured in the same run on the
// same PostgreSQL (pgbench), so results are compared as ratios on noisy
// shared machines. Internal to MIO; not a stable API.
package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/localpg"
	"github.com/miohq/mio/migrations"
)

// Env is a database (given or private) and a running `mio serve`.
type Env struct {
	DatabaseURL string
	MasterKey   []byte
	BaseURL     string
	// AdminURL is the server's admin listener (/metrics, /debug/pprof).
	AdminURL string
	// ProfileToken is an operator admin token for the server's
	// /debug/pprof (the server runs with MIO_PPROF=true).
	ProfileToken string
	server       *exec.Cmd
	pg           *localpg.Server
	dir          string
	out          io.Writer
}

// EnvOptions configure Start.
type EnvOptions struct {
	// DatabaseURL of an existing database; empty starts a private one.
	DatabaseURL string
	// Binary is the mio binary to run as the server.
	Binary string
	// ServerEnv adds environment to the server.
	ServerEnv []string
	// ServerFlags are settings given to the bench command as flags
	// (config.Config.FromFlags): the server gets them over ServerEnv and
	// the environment, under the wiring the bench owns (database URL,
	// master key, listener addresses).
	ServerFlags []string
	Out         io.Writer
}

// Start prepares the database (migrated) and starts the server.
func Start(ctx context.Context, opts EnvOptions) (*Env, error) {
	e := &Env{out: opts.Out, MasterKey: make([]byte, 32)}
	_, _ = rand.Read(e.MasterKey)
	e.DatabaseURL = opts.DatabaseURL
	if e.DatabaseURL == "" {
		dir, err := os.MkdirTemp("", "mio-bench-")
		if err != nil {
			return nil, err
		}
		_ = os.Chmod(dir, 0o755)
		e.dir = dir
		fmt.Fprintf(e.out, "starting a private PostgreSQL in %s (default durability settings)\n", dir)
		e.pg, err = localpg.Start(ctx, localpg.Options{DataDir: filepath.Join(dir, "pg"), KillWithParent: true,
			Settings: map[string]string{"max_connections": "200", "shared_buffers": "256MB"}})
		if err != nil {
			return nil, err
		}
		conn, err := pgx.Connect(ctx, e.pg.URL("postgres"))
		if err != nil {
			return nil, err
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE mio_bench")
		conn.Close(ctx)
		if err != nil {
			return nil, err
		}
		e.DatabaseURL = e.pg.URL("mio_bench")
	}
	owner, err := db.Open(ctx, e.DatabaseURL, db.PoolOptions{MaxConns: 2, StatementTimeout: -1})
	if err != nil {
		return nil, err
	}
	_, err = migrations.New(owner).Up(ctx)
	if err == nil {
		e.ProfileToken, _, err = admin.New(owner, nil, "").AdminTokenCreate(ctx, admin.AdminTokenCreateParams{
			Name: "bench-profile", Roles: []db.AdminRole{db.AdminRoleOperator}, TTL: 24 * time.Hour})
	}
	owner.Close()
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	e.BaseURL = "http://" + addr
	adminPort, err := freePort()
	if err != nil {
		return nil, err
	}
	adminAddr := "127.0.0.1:" + strconv.Itoa(adminPort)
	e.AdminURL = "http://" + adminAddr
	cmd := exec.Command(opts.Binary, "serve")
	// Later entries win (os/exec keeps the last of a name).
	cmd.Env = append(os.Environ(), "MIO_LOG_LEVEL=error", "MIO_DB_MAX_CONNS=40", "MIO_PPROF=true")
	cmd.Env = append(cmd.Env, opts.ServerEnv...)
	cmd.Env = append(cmd.Env, opts.ServerFlags...)
	cmd.Env = append(cmd.Env, "MIO_DATABASE_URL="+e.DatabaseURL, "MIO_MASTER_KEY="+base64.StdEncoding.EncodeToString(e.MasterKey),
		"MIO_HTTP_ADDR="+addr, "MIO_ADMIN_ADDR="+adminAddr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e.server = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(e.BaseURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Fprintf(e.out, "server %s (admin, /debug/pprof: %s)\n", e.BaseURL, e.AdminURL)
				return e, nil
			}
		}
		if time.Now().After(deadline) {
			e.Close()
			return nil, fmt.Errorf("server did not become ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CPUProfile records the server's CPU profile for d into path (go tool
// pprof reads it) and returns once it is written.
func (e *Env) CPUProfile(ctx context.Context, d time.Duration, path string) error {
	return e.pprof(ctx, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), path)
}

// AllocsProfile writes the server's allocation profile (every allocation
// since it started, and the heap in use) into path.
func (e *Env) AllocsProfile(ctx context.Context, path string) error {
	return e.pprof(ctx, "allocs", path)
}

func (e *Env) pprof(ctx context.Context, which, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.AdminURL+"/debug/pprof/"+which, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.ProfileToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("pprof %s: %w", which, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("pprof %s: %s: %s", which, resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("pprof %s: %w", which, err)
	}
	return f.Close()
}

// profileAfter, when path is set, records the server's CPU profile for d
// after waiting delay (a load's warm-up), in the background; the
// returned func waits for it. Without a path it does nothing.
func (e *Env) profileAfter(ctx context.Context, delay, d time.Duration, path string) (wait func() error) {
	if path == "" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		select {
		case <-time.After(delay):
			done <- e.CPUProfile(ctx, d, path)
		case <-ctx.Done():
			done <- ctx.Err()
		}
	}()
	return func() error { return <-done }
}

// ServerRSS returns the server's current and peak resident set size, bytes.
func (e *Env) ServerRSS() (cur, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", e.server.Process.Pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			switch fields[0] {
			case "VmRSS:":
				cur = kb * 1024
			case "VmHWM:":
				peak = kb * 1024
			}
		}
	}
	return cur, peak
}

// Close stops the server and the private database.
func (e *Env) Close() {
	if e.server != nil && e.server.Process != nil {
		_ = e.server.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = e.server.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = e.server.Process.Kill()
		}
	}
	if e.pg != nil {
		_ = e.pg.Stop(context.Background())
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

// Pgbench runs a custom pgbench script against the database and returns
// its transactions per second (excluding connection time).
func (e *Env) Pgbench(ctx context.Context, script string, clients int, duration time.Duration) (float64, error) {
	r, err := e.pgbenchRun(ctx, script, clients, duration)
	return r.tps, err
}

// pgbenchResult is a reference run's rate, its transaction count, and the
// CPU it took (loader: pgbench's own client time).
type pgbenchResult struct {
	tps float64
	tx  int64
	cpu cpuUse
}

func (e *Env) pgbenchRun(ctx context.Context, script string, clients int, duration time.Duration) (pgbenchResult, error) {
	var r pgbenchResult
	bin, err := localpg.FindBinDir()
	if err != nil {
		return r, err
	}
	f, err := os.CreateTemp("", "mio-pgbench-*.sql")
	if err != nil {
		return r, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(script); err != nil {
		return r, err
	}
	f.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "pgbench"), "-n", "-M", "prepared", "-c", strconv.Itoa(clients),
		"-j", "2", "-T", strconv.Itoa(int(duration.Seconds())), "-f", f.Name(), e.DatabaseURL)
	cpu0 := e.cpuNow()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return r, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	r.cpu = cpu0.to(e.cpuNow())
	// The loader of this phase is pgbench, not this process.
	r.cpu.loader = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	m := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("pgbench output not understood: %s", out)
	}
	if r.tps, err = strconv.ParseFloat(string(m[1]), 64); err != nil {
		return r, err
	}
	if m := regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`).FindSubmatch(out); m != nil {
		r.tx, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	return r, nil
}

// cpuNow reads the machine's, the server's and this process's CPU time.
func (e *Env) cpuNow() cpuSnap { return cpuSnapshot(e.server.Process.Pid) }

// Exec runs SQL as the owner.
func (e *Env) Exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, e.DatabaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Percentile returns the p-th percentile (0–100) of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(sorted)-1))
	return sorted[i]
}

// SortDurations sorts in place.
func SortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

// tenantName gives a bench tenant a name of its own: tenant names are
// unique, and a run against a given database URL must not reuse the
// tenant (and messages) of an earlier run.
func tenantName(name string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%x", name, b)
}
