// Package dbtest hands each test an isolated, already-migrated PostgreSQL
// database. No database is mocked anywhere in MIO's tests.
//
// Where the server comes from, in order:
//  1. MIO_TEST_DATABASE_URL, when set (a superuser or a role with CREATEDB
//     and CREATEROLE);
//  2. one throwaway cluster started from the local PostgreSQL server
//     binaries, shared by every test package of a `go test ./...` run and
//     stopped (and deleted) a few seconds after the last one exits;
//  3. testcontainers-go, where a Docker daemon answers;
//  4. otherwise the test fails with one line saying what to install.
//
// Each test database is a copy of a template migrated once per migration
// set (CREATE DATABASE … TEMPLATE), which takes tens of milliseconds.
//
// Every test package that uses dbtest calls Main from its TestMain.
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/migrations"
)

// RuntimeRole is the role the service assumes; tests use it too.
const RuntimeRole = "mio_runtime"

// Main runs a test package, then the after funcs (a TestMain's own
// clean-up: Main exits, so a deferred call would not run). It also serves
// as the entry point of the shared cluster's supervisor process (a
// re-executed test binary).
func Main(m *testing.M, after ...func()) {
	if dir := os.Getenv(supervisorEnv); dir != "" {
		os.Exit(supervise(dir))
	}
	code := m.Run()
	shutdown()
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

var (
	setupOnce sync.Once
	setupErr  error
	server    *serverHandle
	tplName   string
)

type serverHandle struct {
	adminURL    string // superuser URL to the maintenance database
	admin       *pgxpool.Pool
	hasFileCopy bool
	close       func()
}

func shutdown() {
	stopBouncer()
	if server != nil {
		server.admin.Close()
		if server.close != nil {
			server.close()
		}
	}
}

func setup() error {
	setupOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		server, setupErr = acquireServer(ctx)
		if setupErr != nil {
			return
		}
		tplName, setupErr = ensureTemplate(ctx, server)
	})
	return setupErr
}

func acquireServer(ctx context.Context) (*serverHandle, error) {
	var (
		url   string
		close func()
		err   error
	)
	switch {
	case os.Getenv("MIO_TEST_DATABASE_URL") != "":
		url = os.Getenv("MIO_TEST_DATABASE_URL")
	case localAvailable():
		url, err = sharedLocalServer(ctx)
	case dockerAvailable(ctx):
		url, close, err = containerServer(ctx)
	default:
		return nil, fmt.Errorf("dbtest: no PostgreSQL for tests: set MIO_TEST_DATABASE_URL, install the PostgreSQL server package (apt-get install postgresql), or start a Docker daemon")
	}
	if err != nil {
		return nil, err
	}
	pool, err := db.Open(ctx, url, db.PoolOptions{MaxConns: 4, StatementTimeout: -1, IdleInTxTimeout: -1, ApplicationName: "mio-dbtest"})
	if err != nil {
		if close != nil {
			close()
		}
		return nil, fmt.Errorf("dbtest: connect to %s: %w", redact(url), err)
	}
	var ver int
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&ver); err != nil {
		pool.Close()
		return nil, err
	}
	return &serverHandle{adminURL: url, admin: pool, hasFileCopy: ver >= 150000, close: close}, nil
}

// migrationsHash names the template after the migration set, so a changed
// migration gets a fresh template.
func migrationsHash() string {
	h := sha256.New()
	_ = fs.WalkDir(migrations.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(migrations.FS(), p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	h.Write([]byte(migrations.RiverSchema))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func ensureTemplate(ctx context.Context, s *serverHandle) (string, error) {
	name := "mio_tpl_" + migrationsHash()
	conn, err := s.admin.Acquire(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Release()
	// Serialize template builds across test processes.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7461001)"); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock(7461001)") //nolint:errcheck
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	build := name + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{build}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{build}.Sanitize()+" TEMPLATE template0"); err != nil {
		return "", err
	}
	url, err := withDatabase(s.adminURL, build)
	if err != nil {
		return "", err
	}
	owner, err := db.Open(ctx, url, db.PoolOptions{MaxConns: 2, StatementTimeout: -1, IdleInTxTimeout: -1})
	if err != nil {
		return "", err
	}
	_, err = migrations.New(owner).Up(ctx)
	owner.Close()
	if err != nil {
		return "", fmt.Errorf("dbtest: migrate template: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{build}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return "", err
	}
	return name, nil
}

// Env is one test's database.
type Env struct {
	// Name of the database.
	Name string
	// OwnerURL connects as the owner (superuser): migrations, fixtures.
	OwnerURL string
	// Pool is the service's pool: every session runs as mio_runtime, so
	// row-level security applies. With MIO_TEST_PGBOUNCER set it goes
	// through PgBouncer in transaction pooling mode (pgbouncer.go).
	Pool *pgxpool.Pool
	// PoolURL is the URL Pool connects with: OwnerURL, or through
	// PgBouncer as PooledRole.
	PoolURL string
	// ListenURL connects straight to the database (never through a
	// pooler): for LISTEN, which needs a session.
	ListenURL string
}

// Options for New.
type Options struct {
	// Empty creates an unmigrated database.
	Empty bool
	// Load, when set, is SQL (a plain pg_dump) run in an empty database,
	// which is then migrated up as `mio migrate up` would: a database of an
	// older schema, upgraded.
	Load []byte
	// MaxConns of the runtime pool. Default 10.
	MaxConns int32
}

// New returns a fresh migrated database for t, dropped at cleanup.
func New(t testing.TB) *Env { return NewWith(t, Options{}) }

// NewWith is New with options.
func NewWith(t testing.TB, opts Options) *Env {
	t.Helper()
	if err := setup(); err != nil {
		t.Fatal(err.Error())
	}
	ctx := context.Background()
	name := "t_" + randomHex(8)
	tpl := tplName
	if opts.Empty || opts.Load != nil {
		tpl = "template0"
	}
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{tpl}.Sanitize()
	if server.hasFileCopy && tpl != "template0" {
		stmt += " STRATEGY FILE_COPY"
	}
	if _, err := server.admin.Exec(ctx, stmt); err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	url, err := withDatabase(server.adminURL, name)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Name: name, OwnerURL: url}
	t.Cleanup(func() {
		if env.Pool != nil {
			env.Pool.Close()
		}
		if _, err := server.admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("dbtest: drop %s: %v", name, err)
		}
	})
	if opts.Empty {
		return env
	}
	if opts.Load != nil {
		if err := loadAndMigrate(ctx, url, opts.Load); err != nil {
			t.Fatalf("dbtest: %v", err)
		}
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = 10
	}
	env.ListenURL = url
	if pooled() {
		if url, err = bouncerURL(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	env.PoolURL = url
	env.Pool, err = db.Open(ctx, url, db.PoolOptions{MaxConns: opts.MaxConns, RuntimeRole: RuntimeRole})
	if err != nil {
		t.Fatalf("dbtest: open runtime pool: %v", err)
	}
	return env
}

// loadAndMigrate runs sql in the database at url on a connection of its
// own (a dump sets the session's search_path), then migrates it up.
func loadAndMigrate(ctx context.Context, url string, sql []byte) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	_, err = conn.PgConn().Exec(ctx, string(sql)).ReadAll()
	conn.Close(ctx)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	owner, err := db.Open(ctx, url, db.PoolOptions{MaxConns: 2, StatementTimeout: -1, IdleInTxTimeout: -1})
	if err != nil {
		return err
	}
	defer owner.Close()
	if _, err := migrations.New(owner).Up(ctx); err != nil {
		return fmt.Errorf("migrate loaded database: %w", err)
	}
	return nil
}

// OwnerPool opens a pool on the test database as the owner; closed at
// cleanup.
func (e *Env) OwnerPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	p, err := db.Open(context.Background(), e.OwnerURL, db.PoolOptions{MaxConns: 4})
	if err != nil {
		t.Fatalf("dbtest: owner pool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
