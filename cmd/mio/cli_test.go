package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db/dbtest"
)

func TestBadConfigurationExitsWithOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"BadURL", nil, []string{"serve", "--database-url", "not a url"}, "MIO_DATABASE_URL"},
		{"BadURLEnv", []string{"MIO_DATABASE_URL=mysql://u@h/d"}, []string{"migrate", "status"}, "MIO_DATABASE_URL"},
		{"BadDuration", []string{"MIO_SHUTDOWN_TIMEOUT=forever"}, []string{"serve"}, "MIO_SHUTDOWN_TIMEOUT"},
		{"UnknownRole", nil, []string{"serve", "--role", "boss"}, "MIO_ROLE"},
		{"NoDatabase", nil, []string{"serve"}, "MIO_DATABASE_URL"},
		{"UnknownCommand", nil, []string{"frobnicate"}, "unknown command"},
		{"DevInProd", []string{"MIO_ENV=prod"}, []string{"dev"}, "MIO_ENV=prod"},
		{"MigrateWhat", nil, []string{"migrate", "sideways"}, "up, down or status"},
		{"UnknownChannelSetting", []string{"MIO_DATABASE_URL=postgres://mio@127.0.0.1:1/mio", "MIO_ATTACHMENT_MAX_BYTES=25MiB,icq=1MiB"},
			[]string{"serve"}, `MIO_ATTACHMENT_MAX_BYTES: no channel "icq"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runMio(t, tc.env, tc.args...)
			require.NotZero(t, r.code, "stdout=%s stderr=%s", r.stdout, r.stderr)
			msg := strings.TrimRight(r.stderr, "\n")
			require.NotContains(t, msg, "\n", "one line expected, got %q", r.stderr)
			require.Contains(t, msg, tc.want)
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := runMio(t, nil, "version")
	require.Zero(t, r.code, r.stderr)
	require.Regexp(t, `^mio \S+ \(commit \S+, schema \d+\)\n$`, r.stdout)
}

// pendingRow matches a status row in state pending (River names one of
// its migrations "pending and more", so match the state column).
var pendingRow = regexp.MustCompile(`(?m)\spending$`)

func TestMigrate(t *testing.T) {
	t.Parallel()
	env := dbtest.NewWith(t, dbtest.Options{Empty: true})
	dbURL := []string{"MIO_DATABASE_URL=" + env.OwnerURL}

	r := runMio(t, dbURL, "migrate", "status")
	require.Zero(t, r.code, r.stderr)
	require.Regexp(t, pendingRow, r.stdout)
	require.NotRegexp(t, `(?m)\sapplied$`, r.stdout)

	r = runMio(t, dbURL, "serve", "--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0")
	require.NotZero(t, r.code, "serve must refuse an out-of-date schema")
	require.Equal(t, 1, strings.Count(strings.TrimRight(r.stderr, "\n"), "\n")+1, r.stderr)
	require.Contains(t, r.stderr, "mio migrate up")

	r = runMio(t, dbURL, "migrate", "up")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "applied mio 1 00001_baseline.sql")
	require.Contains(t, r.stdout, "applied river")

	r = runMio(t, dbURL, "migrate", "up")
	require.Zero(t, r.code, r.stderr)
	require.Equal(t, "schema is up to date\n", r.stdout, "up is idempotent")

	r = runMio(t, dbURL, "migrate", "status")
	require.Zero(t, r.code, r.stderr)
	require.NotRegexp(t, pendingRow, r.stdout)
	require.Regexp(t, `mio\s+1\s+00001_baseline.sql\s+applied`, r.stdout)

	// down undoes the migrations after the baseline, newest first, then
	// refuses the baseline.
	for i := 0; ; i++ {
		r = runMio(t, dbURL, "migrate", "down")
		if r.code != 0 {
			require.Contains(t, r.stderr, "baseline", "the baseline cannot be rolled back")
			break
		}
		require.Less(t, i, 100, "down never reached the baseline")
	}
	r = runMio(t, dbURL, "migrate", "up")
	require.Zero(t, r.code, r.stderr)

	r = runMio(t, dbURL, "migrate", "status")
	require.NotRegexp(t, pendingRow, r.stdout)
}
