// Package migrations holds MIO's schema and brings a database to it: the
// goose migrations of the tables (00001_baseline.sql and
// 00002_baseline_policies.sql, then one file per later change, numbered
// from 00043), River's own migrations, and the current text of every
// function (functions/) and view (views/), applied after the migrations.
// README.md says how to change each.
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

	"crypto/sha256"
	"encoding/hex"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql functions/*.sql views/*.sql
var files embed.FS

// FS returns the embedded migration, function and view files.
func FS() fs.FS { return files }

// BaselineTables is the version of the baseline's tables; the function
// files are created after it, before the baseline's policies and triggers
// (00002) and every later migration.
const BaselineTables = 1

// BaselineEnd is the last version the baseline stands for: a database
// created before the baseline has versions up to it recorded, and never
// runs the baseline. New migrations are numbered after it.
const BaselineEnd = 42

// ErrBaselineDown is returned by Down when the newest applied migration is
// part of the baseline, which cannot be rolled back.
var ErrBaselineDown = errors.New("the baseline cannot be rolled back")

// GooseTable is the table goose records MIO's applied versions in.
const GooseTable = "public.mio_schema_migrations"

// RiverSchema is the schema River's tables live in.
const RiverSchema = "river"

// ErrSchemaOutOfDate is returned by Check when migrations are pending.
var ErrSchemaOutOfDate = errors.New("database schema is out of date: run `mio migrate up`")

// Migrator applies MIO's and River's migrations and MIO's function and
// view files through an owner connection pool.
type Migrator struct {
	pool *pgxpool.Pool
	defs fs.FS // the function and view files: files, or a test's
	// channelTypes are the channel registry's channels (WithChannelTypes);
	// nil leaves mio.channel_types as it is.
	channelTypes []ChannelType

	mu       sync.Mutex
	verified string // fingerprint of schema mio's functions and views last found equal to the files
}

// New returns a Migrator over pool, which must connect as the schema owner.
func New(pool *pgxpool.Pool) *Migrator { return &Migrator{pool: pool, defs: files} }

func (m *Migrator) provider() (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(m.pool)
	store, err := database.NewStore(goose.DialectPostgres, GooseTable)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("goose store: %w", err)
	}
	p, err := goose.NewProvider("", db, files, goose.WithStore(store), goose.WithDisableGlobalRegistry(true))
	// Goose reads only the top-level *.sql files; versions recorded in the
	// database without a file (the history the baseline replaced) are
	// ignored.
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
	Source  string // "mio", "river", or "definition" (a function or view file; Version 0)
	Version int64
	Name    string
	Applied bool
}

// Up brings the database to the current schema, and is idempotent: the
// baseline's tables (on a new database), the functions no migration has
// created yet, every other pending MIO migration, River's pending
// migrations, the function and view files where the database differs
// from them (applyDefinitions), then, given WithChannelTypes, the
// registry's channels in mio.channel_types.
func (m *Migrator) Up(ctx context.Context) ([]AppliedVersion, error) {
	p, db, err := m.provider()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var out []AppliedVersion
	add := func(results []*goose.MigrationResult) {
		for _, r := range results {
			out = append(out, AppliedVersion{Source: "mio", Version: r.Source.Version, Name: baseName(r.Source.Path), Applied: true})
		}
	}
	results, err := p.UpTo(ctx, BaselineTables)
	add(results)
	if err != nil {
		return out, fmt.Errorf("mio migrations: %w", err)
	}
	if err := m.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error { return createMissingFunctions(ctx, c.Conn(), m.defs) }); err != nil {
		return out, fmt.Errorf("mio functions: %w", err)
	}
	results, err = p.Up(ctx)
	add(results)
	if err != nil {
		return out, fmt.Errorf("mio migrations: %w", err)
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
	var diff *DefinitionsDiff
	err = m.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) (err error) {
		diff, err = applyDefinitions(ctx, c.Conn(), m.defs)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("mio functions and views: %w", err)
	}
	for _, names := range [][]string{diff.Missing, diff.Changed} {
		for _, n := range names {
			out = append(out, AppliedVersion{Source: "definition", Name: n, Applied: true})
		}
	}
	for _, n := range diff.Extra {
		out = append(out, AppliedVersion{Source: "definition", Name: n + " (dropped)", Applied: true})
	}
	if m.channelTypes == nil {
		return out, nil
	}
	var changed []AppliedVersion
	err = pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) (err error) {
		changed, err = syncChannelTypes(ctx, tx, m.channelTypes)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("mio channel types: %w", err)
	}
	return append(out, changed...), nil
}

// Down rolls back the newest MIO migration after the baseline
// (ErrBaselineDown when there is none). River's migrations are left in
// place (they belong to the job queue, not to MIO's schema), and so are the
// function and view files' objects: the next Up applies the files.
func (m *Migrator) Down(ctx context.Context) (*AppliedVersion, error) {
	p, db, err := m.provider()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("mio migrations: %w", err)
	}
	if v == 0 {
		return nil, nil
	}
	if v <= BaselineEnd {
		return nil, ErrBaselineDown
	}
	// Exactly the newest version: goose's Down looks up the file of every
	// recorded version above its target, and a database migrated before
	// the baseline records versions 3 to 42, which have none.
	r, err := p.ApplyVersion(ctx, v, false)
	if err != nil {
		return nil, fmt.Errorf("mio migrations: %w", err)
	}
	return &AppliedVersion{Source: "mio", Version: r.Source.Version, Name: baseName(r.Source.Path)}, nil
}

// Status lists every MIO migration, River's migrations and, given
// WithChannelTypes, the registry's channels (applied when
// mio.channel_types has a registered row of the slug).
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
	if m.channelTypes == nil {
		return out, nil
	}
	cts, err := channelTypesStatus(ctx, m.pool, m.channelTypes)
	return append(out, cts...), err
}

// Check returns ErrSchemaOutOfDate when any MIO or River migration is
// pending, a registered channel (WithChannelTypes) has no row in
// mio.channel_types, or a function or view differs from its file (or no
// file defines it), and nil when the schema is current. Comparing with the files builds
// them in the session's temporary schema, in a transaction rolled back; it
// is skipped while the database's functions and views are those last found
// current.
func (m *Migrator) Check(ctx context.Context) error {
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	for _, s := range st {
		if !s.Applied && s.Source == "channel_type" {
			return fmt.Errorf("%w (channel %s is not registered in mio.channel_types)", ErrSchemaOutOfDate, s.Name)
		}
		if !s.Applied {
			return ErrSchemaOutOfDate
		}
	}
	diff, err := m.definitionsDiff(ctx)
	if err != nil {
		return err
	}
	if !diff.Empty() {
		return fmt.Errorf("%w (functions and views: %s)", ErrSchemaOutOfDate, diff)
	}
	return nil
}

// definitionsDiff compares schema mio's functions and views with the files.
func (m *Migrator) definitionsDiff(ctx context.Context) (*DefinitionsDiff, error) {
	defs, err := definitions(m.defs)
	if err != nil {
		return nil, err
	}
	tx, err := m.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	have, err := catalogObjects(ctx, tx, "mio")
	if err != nil {
		return nil, err
	}
	fp := fingerprint(have)
	m.mu.Lock()
	verified := m.verified == fp
	m.mu.Unlock()
	if verified {
		return &DefinitionsDiff{}, nil
	}
	diff, _, _, err := diffDefinitions(ctx, tx, defs)
	if err != nil {
		return nil, fmt.Errorf("mio functions and views: %w", err)
	}
	if diff.Empty() {
		m.mu.Lock()
		m.verified = fp
		m.mu.Unlock()
	}
	return diff, nil
}

// DefinitionsDiff compares schema mio's functions and views with the
// function and view files.
func (m *Migrator) DefinitionsDiff(ctx context.Context) (*DefinitionsDiff, error) {
	m.mu.Lock()
	m.verified = ""
	m.mu.Unlock()
	return m.definitionsDiff(ctx)
}

func fingerprint(objs map[string]object) string {
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		o := objs[k]
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", k, o.def, o.acl)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Latest returns the newest embedded MIO migration version (BaselineEnd
// until a migration after the baseline exists: a database at the baseline
// is at the schema of version 42).
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
	return max(latest, BaselineEnd), nil
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
