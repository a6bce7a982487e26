package dbtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/miohq/mio/db/localpg"
)

// PooledRole is the login role runtime pools use behind PgBouncer: a
// member of RuntimeRole that starts every server session as RuntimeRole
// (ALTER ROLE … SET role), because a session-level SET ROLE issued by a
// client does not follow it from one server connection to the next in
// transaction pooling. See docs/deploy.md, "Connection poolers".
const PooledRole = "mio_pooled"

// pgbouncerEnv, when set (to anything), makes New's runtime pool go
// through a PgBouncer in transaction pooling mode started for the test
// process: MIO_TEST_PGBOUNCER=1 go test ./consume/. The owner pool and
// notifications (ListenURL) stay direct.
const pgbouncerEnv = "MIO_TEST_PGBOUNCER"

var (
	bouncerOnce sync.Once
	bouncer     *localpg.PgBouncer
	bouncerDir  string
	bouncerErr  error
)

// pooled reports whether runtime pools go through PgBouncer.
func pooled() bool { return os.Getenv(pgbouncerEnv) != "" }

// Pooled reports whether New's runtime pools go through PgBouncer in
// transaction mode (MIO_TEST_PGBOUNCER): a test of what one server
// session keeps between transactions (its prepared statements' plans)
// cannot see it there.
func Pooled() bool { return pooled() }

// bouncerURL is the URL of database name through the process's PgBouncer
// (started on first use, stopped by Main), as PooledRole, with the query
// mode a transaction pooler needs (no named prepared statements).
func bouncerURL(ctx context.Context, name string) (string, error) {
	bouncerOnce.Do(func() { bouncer, bouncerErr = startBouncer(ctx) })
	if bouncerErr != nil {
		return "", bouncerErr
	}
	return bouncer.URL(name, PooledRole) + "&default_query_exec_mode=cache_describe", nil
}

func startBouncer(ctx context.Context) (*localpg.PgBouncer, error) {
	if err := CreatePooledRole(ctx, server.admin); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(server.adminURL)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "mio-pgbouncer-")
	if err != nil {
		return nil, err
	}
	bouncerDir = dir
	b, err := localpg.StartPgBouncer(ctx, BouncerOptions(filepath.Join(dir, "b"), int(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("dbtest: %w", err)
	}
	return b, nil
}

// CreatePooledRole creates PooledRole on the cluster conn reaches (as a
// superuser), unless it exists. Roles are cluster-wide and test processes
// run concurrently: one at a time creates it.
func CreatePooledRole(ctx context.Context, conn interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}) error {
	if _, err := conn.Exec(ctx, fmt.Sprintf(`BEGIN;
SELECT pg_advisory_xact_lock(hashtext('mio-dbtest-pooled-role'));
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%[1]s') THEN
    CREATE ROLE %[1]s LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE %[2]s;
    ALTER ROLE %[1]s SET role = %[2]s;
    ALTER ROLE %[1]s SET statement_timeout = '30s';
    ALTER ROLE %[1]s SET idle_in_transaction_session_timeout = '10s';
    ALTER ROLE %[1]s SET jit = off;
  END IF;
END $$;
COMMIT`, PooledRole, RuntimeRole)); err != nil {
		return fmt.Errorf("dbtest: pooled role: %w", err)
	}
	return nil
}

// BouncerOptions configure a PgBouncer in transaction pooling mode, in
// dir, in front of the server on 127.0.0.1:upstreamPort, for PooledRole.
// Connect through it with the URL's default_query_exec_mode=cache_describe
// (no named prepared statements).
func BouncerOptions(dir string, upstreamPort int) localpg.PgBouncerOptions {
	return localpg.PgBouncerOptions{
		Dir:          dir,
		UpstreamPort: upstreamPort,
		Users:        []string{PooledRole},
		PoolMode:     "transaction",
		// db.Open sends these as startup parameters; PgBouncer refuses
		// them unless told to drop them (the role sets them instead).
		IgnoreStartupParameters: []string{"statement_timeout", "idle_in_transaction_session_timeout", "jit"},
	}
}

func stopBouncer() {
	if bouncer != nil {
		bouncer.Stop()
	}
	if bouncerDir != "" {
		_ = os.RemoveAll(bouncerDir)
	}
}
