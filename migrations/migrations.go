// Package migrations holds MIO's schema migrations (goose SQL files,
// embedded in the binary) and runs them together with River's own
// migrations, so one command brings a database to the current schema.
//
// Internal to MIO; not a stable API.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var files embed.FS

// FS returns the embedded migration files.
func FS() fs.FS { return files }

// GooseTable is the table goose records MIO's applied versions in.
const GooseTable = "public.mio_schema_migrations"

// RiverSchema is the schema River's tables live in.
const RiverSchema = "river"

// ErrSchemaOutOfDate is returned by Check when migrations are pending.
var ErrSchemaOutOfDate = errors.New("database schema is out of date: run `mio migrate up`")

// Migrator applies MIO's and River's migrations through an owner
// connection pool.
type Migrator struct {
	pool *pgxpool.Pool
}

// New returns a Migrator over pool, which must connect as the schema owner.
func New(pool *pgxpool.Pool) *Migrator { return &Migrator{pool: pool} }

func (m *Migrator) provider() (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(m.pool)
	store, err := database.NewStore(goose.DialectPostgres, GooseTable)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("goose store: %w", err)
	}
	p, err := goose.NewProvider("", db, files, goose.WithStore(store), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("goose provider: %w", err)
	}
	return p, db, nil
}

func (m *Migrator) river() (*rivermigrate.Migrator[pgx.Tx], error) {
	return rivermigrate.New(riverpgxv5.New(m.pool), &rivermigrate.Config{Schema: RiverSchema})
}

// AppliedVersion is one migration and whether it has been applied.
type AppliedVersion struct {
	Source  string // "mio" or "river"
	Version int64
	Name    string
	Applied bool
}

// Up applies every pending MIO migration, then every pending River
// migration. It is idempotent.
func (m *Migrator) Up(ctx context.Context) ([]AppliedVersion, error) {
	p, db, err := m.provider()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("mio migrations: %w", err)
	}
	var out []AppliedVersion
	for _, r := range results {
		out = append(out, AppliedVersion{Source: "mio", Version: r.Source.Version, Name: baseName(r.Source.Path), Applied: true})
	}
	rm, err := m.river()
	if err != nil {
		return out, fmt.Errorf("river migrator: %w", err)
	}
	res, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return out, fmt.Errorf("river migrations: %w", err)
	}
	for _, v := range res.Versions {
		out = append(out, AppliedVersion{Source: "river", Version: int64(v.Version), Name: v.Name, Applied: true})
	}
	return out, nil
}

// Down rolls back the newest MIO migration. River's migrations are left in
// place (they belong to the job queue, not to MIO's schema).
func (m *Migrator) Down(ctx context.Context) (*AppliedVersion, error) {
	p, db, err := m.provider()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	r, err := p.Down(ctx)
	if err != nil {
		if errors.Is(err, goose.ErrNoNextVersion) {
			return nil, nil
		}
		return nil, fmt.Errorf("mio migrations: %w", err)
	}
	return &AppliedVersion{Source: "mio", Version: r.Source.Version, Name: baseName(r.Source.Path)}, nil
}

// Status lists every MIO migration and River's pending ones.
func (m *Migrator) Status(ctx context.Context) ([]AppliedVersion, error) {
	p, db, err := m.provider()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("mio migrations: %w", err)
	}
	var out []AppliedVersion
	for _, s := range st {
		out = append(out, AppliedVersion{Source: "mio", Version: s.Source.Version, Name: baseName(s.Source.Path), Applied: s.State == goose.StateApplied})
	}
	rm, err := m.river()
	if err != nil {
		return out, fmt.Errorf("river migrator: %w", err)
	}
	// River's GetVersion-style listing: a dry-run Up lists what is pending.
	res, err := rm.Migrate(ctx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{DryRun: true})
	if err != nil {
		return out, fmt.Errorf("river migrations: %w", err)
	}
	pending := map[int]bool{}
	for _, v := range res.Versions {
		pending[v.Version] = true
	}
	for _, v := range rm.AllVersions() {
		out = append(out, AppliedVersion{Source: "river", Version: int64(v.Version), Name: v.Name, Applied: !pending[v.Version]})
	}
	return out, nil
}

// Check returns ErrSchemaOutOfDate when any MIO or River migration is
// pending, and nil when the schema is current.
func (m *Migrator) Check(ctx context.Context) error {
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	for _, s := range st {
		if !s.Applied {
			return ErrSchemaOutOfDate
		}
	}
	return nil
}

// Latest returns the newest embedded MIO migration version.
func Latest() (int64, error) {
	entries, err := fs.Glob(files, "*.sql")
	if err != nil || len(entries) == 0 {
		return 0, fmt.Errorf("no embedded migrations: %v", err)
	}
	var latest int64
	for _, e := range entries {
		v, err := goose.NumericComponent(e)
		if err != nil {
			return 0, err
		}
		latest = max(latest, v)
	}
	return latest, nil
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
