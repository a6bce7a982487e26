// Package db is MIO's data layer: the pgx connection pool, explicit
// transactions (with the tenant set for row-level security), and typed
// wrappers around the sqlc queries generated from queries/*.sql. Generated
// code stays in db/internal/dbsqlc; callers see only this package's types.
// Every write comes as a function taking a DBTX, so callers compose writes
// (inbox row + River job, outbox row + River job) in one transaction.
//
// Internal to MIO; not a stable API.
package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// DBTX is a pool, a connection or a transaction.
type DBTX = dbsqlc.DBTX

// Errors translated once, here, from PostgreSQL errors.
var (
	// ErrNotFound: no row matched (or row-level security hides it).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique key already exists.
	ErrConflict = errors.New("already exists")
	// ErrNoTenant: a tenant-scoped operation was attempted without a tenant.
	ErrNoTenant = errors.New("no tenant set")
	// ErrUnknownChannelType: an account names a channel type that
	// mio.channel_types does not hold.
	ErrUnknownChannelType = errors.New("unknown channel type (mio.channel_types)")
)

// PoolOptions configure Open.
type PoolOptions struct {
	// MaxConns caps the pool. Default 20.
	MaxConns int32
	// RuntimeRole is the role (no BYPASSRLS) every session assumes with SET
	// ROLE right after connecting. Empty keeps the login role (migrations).
	RuntimeRole string
	// StatementTimeout and IdleInTxTimeout bound the service's own sessions
	// so a stuck transaction of MIO's own cannot pin vacuum's horizon.
	// Defaults 30s and 10s; negative disables.
	StatementTimeout time.Duration
	IdleInTxTimeout  time.Duration
	// ApplicationName shows in pg_stat_activity. Default "mio".
	ApplicationName string
}

// Open connects a pool to url and checks it answers.
func Open(ctx context.Context, url string, opts PoolOptions) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = 20
	}
	if opts.StatementTimeout == 0 {
		opts.StatementTimeout = 30 * time.Second
	}
	if opts.IdleInTxTimeout == 0 {
		opts.IdleInTxTimeout = 10 * time.Second
	}
	if opts.ApplicationName == "" {
		opts.ApplicationName = "mio"
	}
	cfg.MaxConns = opts.MaxConns
	rp := cfg.ConnConfig.RuntimeParams
	rp["application_name"] = opts.ApplicationName
	// MIO's statements are short OLTP statements on partitioned tables
	// whose generic plans can carry large cost estimates (a disabled plan
	// node, default statistics of a fresh partition): JIT compiling them
	// cost 0.5 s per statement where they run in under 1 ms (measured
	// with pg_stat_statements under mio-bench consume). A user's URL may
	// still set jit explicitly (options=-c jit=on).
	if _, set := rp["jit"]; !set {
		rp["jit"] = "off"
	}
	if opts.StatementTimeout > 0 {
		rp["statement_timeout"] = fmt.Sprint(opts.StatementTimeout.Milliseconds())
	}
	if opts.IdleInTxTimeout > 0 {
		rp["idle_in_transaction_session_timeout"] = fmt.Sprint(opts.IdleInTxTimeout.Milliseconds())
	}
	role := opts.RuntimeRole
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		registerUUID(c.TypeMap())
		if role == "" {
			return nil
		}
		_, err := c.Exec(ctx, "SET ROLE "+pgx.Identifier{role}.Sanitize())
		if err != nil {
			return fmt.Errorf("assume runtime role %s: %w", role, err)
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// setTenantSQL sets the transaction's tenant ($1: its id, or "" for none).
const setTenantSQL = "SELECT set_config('app.current_tenant_id', $1, true)"

// SetTenant scopes the rest of transaction tx to tenantID: row-level
// security then shows and accepts only that tenant's rows. The setting is
// transaction-local (SET LOCAL semantics), so it never leaks to the next
// user of the pooled connection.
func SetTenant(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) error {
	if tenantID == uuid.Nil {
		return ErrNoTenant
	}
	if _, err := tx.Exec(ctx, setTenantSQL, tenantID.String()); err != nil {
		return fmt.Errorf("set tenant: %w", err)
	}
	return nil
}

// InTx runs fn in a transaction on pool, committing when fn returns nil.
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, fn)
}

// InTenantTx runs fn in a transaction scoped to tenantID.
func InTenantTx(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, fn func(tx pgx.Tx) error) error {
	tx, err := BeginTenant(ctx, pool, tenantID)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// translate maps driver errors to this package's errors, once.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		case "23503":
			if pgErr.ConstraintName == "accounts_channel_type_fkey" {
				return ErrUnknownChannelType
			}
		case "42501":
			// insufficient_privilege, including a row-level security
			// violation on insert/update.
			return fmt.Errorf("permission denied: %s", pgErr.Message)
		}
	}
	return err
}

// IsUnavailable reports whether err means the database could not be
// reached or timed out, as opposed to a rejected statement.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08 connection exception, 53 insufficient resources, 57
		// operator intervention (shutdown, statement timeout), 40 rollback.
		switch pgErr.Code[:2] {
		case "08", "53", "57", "40":
			return true
		}
		return false
	}
	// Anything else (connect errors, closed connections, network
	// timeouts) never reached a verdict from the server.
	return true
}

func queries() *dbsqlc.Queries { return dbsqlc.New() }

// BeginTenant begins a transaction already scoped to tenantID, in one
// round trip (the tenant setting rides on the BEGIN).
func BeginTenant(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID) (pgx.Tx, error) {
	if tenantID == uuid.Nil {
		return nil, ErrNoTenant
	}
	// tenantID.String() is a canonical UUID: safe to inline.
	return pool.BeginTx(ctx, pgx.TxOptions{
		BeginQuery: "BEGIN; SELECT set_config('app.current_tenant_id', '" + tenantID.String() + "', true)",
	})
}
