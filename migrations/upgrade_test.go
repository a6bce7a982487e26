package migrations_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/db/localpg"
	"github.com/miohq/mio/migrations"
)

// preBaseline is a database migrated by the migrations the baseline
// replaced, with data (testdata/v0-schema-and-data.sql).
func preBaseline(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/v0-schema-and-data.sql")
	require.NoError(t, err)
	return b
}

// TestUpgradeFromPreBaseline: a database created before the baseline
// (versions up to 42 recorded) runs no baseline or River migration, only the
// migrations after the baseline and the function and view files; it is then current, its schema dump equals a new
// database's, the baseline cannot be rolled back, and a second migrate up
// does nothing.
func TestUpgradeFromPreBaseline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.NewWith(t, dbtest.Options{Empty: true})
	conn, err := pgx.Connect(ctx, env.OwnerURL)
	require.NoError(t, err)
	_, err = conn.PgConn().Exec(ctx, string(preBaseline(t))).ReadAll()
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	owner, err := db.Open(ctx, env.OwnerURL, db.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(owner.Close)
	stale := functionsWithoutFile(t, owner)
	require.NotEmpty(t, stale, "the old database has functions no file defines")
	// The registry's channels: the frozen database's accounts name some of
	// them, and mio.channel_types' foreign key validates.
	var types []migrations.ChannelType
	for _, d := range builtin.Registry(builtin.Options{}).Describe() {
		types = append(types, migrations.ChannelType{Slug: d.Slug, DisplayName: d.DisplayName})
	}
	m := migrations.New(owner).WithChannelTypes(types)
	applied, err := m.Up(ctx)
	require.NoError(t, err)
	require.Empty(t, functionsWithoutFile(t, owner), "functions no file defines are dropped")
	var dropped []string
	for _, a := range applied {
		if name, ok := strings.CutSuffix(a.Name, " (dropped)"); ok {
			dropped = append(dropped, name[:strings.Index(name, "(")])
		}
	}
	for _, f := range stale {
		require.Contains(t, dropped, f)
	}
	for _, a := range applied {
		// Only the migrations after the baseline (from 00043), the
		// definition files and the channel types run; River's are
		// current already.
		if a.Source != "definition" && a.Source != "channel_type" {
			require.True(t, a.Source == "mio" && a.Version > 42, "%s %d %s ran on a database at the baseline", a.Source, a.Version, a.Name)
		}
	}
	again, err := m.Up(ctx)
	require.NoError(t, err)
	require.Empty(t, again)
	require.NoError(t, m.Check(ctx))
	st, err := m.Status(ctx)
	require.NoError(t, err)
	for _, s := range st {
		require.True(t, s.Applied, "%s %d %s", s.Source, s.Version, s.Name)
	}
	// Down undoes the migrations after the baseline one by one, then
	// refuses the baseline.
	for {
		v, err := m.Down(ctx)
		if err != nil {
			require.ErrorIs(t, err, migrations.ErrBaselineDown)
			break
		}
		require.Greater(t, v.Version, int64(migrations.BaselineEnd))
	}
	_, err = m.Up(ctx)
	require.NoError(t, err)

	fresh := dbtest.New(t)
	want, got := schemaDump(t, fresh.OwnerURL), schemaDump(t, env.OwnerURL)
	require.Empty(t, without(want, got), "in a new database's schema, not in the upgraded one's")
	require.Empty(t, without(got, want), "in the upgraded database's schema, not in a new one's")
}

// functionsWithoutFile returns the names of schema mio's functions and
// procedures that no file of functions/ defines.
func functionsWithoutFile(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT DISTINCT proname::text FROM pg_proc WHERE pronamespace = 'mio'::regnamespace ORDER BY 1`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if _, err := fs.Stat(migrations.FS(), "functions/"+n+".sql"); err != nil {
			out = append(out, n)
		}
	}
	return out
}

// without returns the entries of a not in b.
func without(a, b []string) []string {
	var out []string
	for _, e := range a {
		if !slices.Contains(b, e) {
			out = append(out, e)
		}
	}
	return out
}

// schemaDump returns pg_dump --schema-only of the database at url as its
// entries (one object each), sorted, less what legitimately differs between
// two databases of the same schema: the inbox's day partitions (named after
// the days around the database's creation) and pg_dump's session noise.
// Sorted: pg_dump orders objects it has no rule for by creation.
func schemaDump(t *testing.T, url string) []string {
	t.Helper()
	bin, err := localpg.FindBinDir()
	if err != nil {
		t.Skipf("no pg_dump: %v", err)
	}
	out, err := exec.Command(filepath.Join(bin, "pg_dump"), "--schema-only", "--no-owner", "--dbname", url).Output()
	require.NoError(t, err)
	dayPartition := regexp.MustCompile(`inbox_p\d{8}`)
	var entries []string
	for _, e := range strings.Split(string(out), "\n--\n-- Name: ")[1:] {
		if dayPartition.MatchString(e) {
			continue
		}
		var keep []string
		for _, l := range strings.Split(e, "\n") {
			if strings.HasPrefix(l, `\`) || strings.HasPrefix(l, "-- Dumped") || strings.HasPrefix(l, "-- PostgreSQL database dump") {
				continue
			}
			keep = append(keep, l)
		}
		entries = append(entries, strings.TrimSpace(strings.Join(keep, "\n")))
	}
	require.NotEmpty(t, entries)
	slices.Sort(entries)
	return entries
}
