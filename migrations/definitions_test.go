package migrations_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/migrations"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// TestDefinitionsAreTheFiles: after migrate up, every function, procedure
// and view of schema mio comes from a file of functions/ or views/ (none
// without a file is left) and equals what the file creates (built beside it in a temporary schema and
// compared by definition and grants), and the schema is current.
func TestDefinitionsAreTheFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	m := migrations.New(env.OwnerPool(t))
	diff, err := m.DefinitionsDiff(ctx)
	require.NoError(t, err)
	require.True(t, diff.Empty(), diff.String())
	require.NoError(t, m.Check(ctx))

	var objects int
	require.NoError(t, env.OwnerPool(t).QueryRow(ctx, `SELECT
		(SELECT count(DISTINCT proname) FROM pg_proc WHERE pronamespace = 'mio'::regnamespace)
		+ (SELECT count(*) FROM pg_class WHERE relkind = 'v' AND relnamespace = 'mio'::regnamespace)`).Scan(&objects))
	files, err := fs.Glob(migrations.FS(), "*/*.sql")
	require.NoError(t, err)
	require.Equal(t, len(files), objects, "one file per function name or view")
	require.Empty(t, functionsWithoutFile(t, env.OwnerPool(t)))
}

// TestBaselineSingletonRows: the singleton tables have their one row in a
// new database (the ring's generation, the range-id epoch, the delivery-id
// key), as the service expects.
func TestBaselineSingletonRows(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	for _, table := range []string{"mio.consumer_log_gen", "mio.consumer_id_epoch", "mio.delivery_id_key"} {
		var n int
		require.NoError(t, env.OwnerPool(t).QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n))
		require.Equal(t, 1, n, table)
	}
}

// TestDefinitionsDriftRepaired: functions and views changed in the
// database (a body, a result type, a view's columns), a view dropped and a
// function no file defines are reported by Check, and migrate up brings
// every one back to its file and drops the extra function.
func TestDefinitionsDriftRepaired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	owner := env.OwnerPool(t)
	m := migrations.New(owner)
	for _, stmt := range []string{
		`CREATE FUNCTION mio.not_in_any_file() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
		`CREATE OR REPLACE FUNCTION mio.handoff_rank(state text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
		 AS $$ SELECT CASE state WHEN 'queued' THEN 10 WHEN 'sending' THEN 20 WHEN 'handed_off' THEN 100 WHEN 'dead' THEN 100 WHEN 'parked' THEN 30 END $$`,
		`DROP FUNCTION mio.uuid_time_floor(timestamptz)`,
		`CREATE FUNCTION mio.uuid_time_floor(t timestamptz) RETURNS text LANGUAGE sql AS $$ SELECT t::text $$`,
		`DROP VIEW mio.queue_health`,
		`DROP VIEW mio.dead_letters`,
		`CREATE VIEW mio.dead_letters AS SELECT 1 AS only_column`,
	} {
		_, err := owner.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	err := m.Check(ctx)
	require.ErrorIs(t, err, migrations.ErrSchemaOutOfDate)
	for _, name := range []string{"not_in_any_file", "handoff_rank", "uuid_time_floor", "queue_health", "dead_letters"} {
		require.Contains(t, err.Error(), name)
	}

	applied, err := m.Up(ctx)
	require.NoError(t, err)
	var names []string
	for _, a := range applied {
		require.Equal(t, "definition", a.Source, "no migration ran")
		names = append(names, a.Name)
	}
	require.Contains(t, names, "not_in_any_file() (dropped)")
	diff, err := m.DefinitionsDiff(ctx)
	require.NoError(t, err)
	require.True(t, diff.Empty(), diff.String())
	require.NoError(t, m.Check(ctx))

	var result string
	var views int
	require.NoError(t, owner.QueryRow(ctx, `SELECT pg_get_function_result('mio.uuid_time_floor(timestamptz)'::regprocedure),
		(SELECT count(*) FROM pg_class WHERE relkind = 'v' AND relnamespace = 'mio'::regnamespace)`).Scan(&result, &views))
	require.Equal(t, "uuid", result)
	require.Equal(t, 3, views)
	_, err = owner.Exec(ctx, `SELECT d.kind, q.kind FROM mio.dead_letters AS d, mio.queue_health AS q LIMIT 1`)
	require.NoError(t, err)

	again, err := m.Up(ctx)
	require.NoError(t, err)
	require.Empty(t, again, "nothing left to apply")
}

// TestChangedFileReapplied: a changed function file is applied by the next
// migrate up, a removed file drops its function, and the database is then
// current for those files (and out of date for the embedded ones).
func TestChangedFileReapplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	owner := env.OwnerPool(t)
	fsys := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(migrations.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), p)
		fsys[p] = &fstest.MapFile{Data: b}
		return err
	}))
	const file = "functions/handoff_rank.sql"
	changed := strings.Replace(string(fsys[file].Data), "WHEN 'dead' THEN 100", "WHEN 'dead' THEN 100 WHEN 'parked' THEN 30", 1)
	require.NotEqual(t, string(fsys[file].Data), changed)
	fsys[file] = &fstest.MapFile{Data: []byte(changed)}
	delete(fsys, "functions/outbox_keep_stats.sql")

	m := migrations.NewWithDefinitions(owner, fsys)
	applied, err := m.Up(ctx)
	require.NoError(t, err)
	var names []string
	for _, a := range applied {
		names = append(names, a.Name)
	}
	require.Contains(t, names, "handoff_rank(state text)")
	require.Contains(t, names, "outbox_keep_stats() (dropped)")

	var rank int
	var stats bool
	require.NoError(t, owner.QueryRow(ctx, `SELECT mio.handoff_rank('parked'),
		EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'outbox_keep_stats')`).Scan(&rank, &stats))
	require.Equal(t, 30, rank)
	require.False(t, stats)
	diff, err := m.DefinitionsDiff(ctx)
	require.NoError(t, err)
	require.True(t, diff.Empty(), diff.String())

	diff, err = migrations.New(owner).DefinitionsDiff(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"handoff_rank(state text)"}, diff.Changed)
	require.Equal(t, []string{"outbox_keep_stats()"}, diff.Missing)
}

// TestCheckAsRuntimeRole: the service checks the schema as its runtime
// role (through a pooler, as a login of its own), which owns the objects
// it builds from the files but not schema mio's: the check compares
// definitions and leaves grants to the owner's migrate up.
func TestCheckAsRuntimeRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	diff, err := migrations.New(env.Pool).DefinitionsDiff(ctx)
	require.NoError(t, err)
	require.True(t, diff.Empty(), diff.String())
	require.NoError(t, migrations.New(env.Pool).Check(ctx))
}
