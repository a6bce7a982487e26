package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchBadFlags: a benchmark's bad arguments are usage errors (exit 2,
// the reason on stderr) before anything starts.
func TestBenchBadFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"consume", "--pullers", "0"}, "--pullers 0: want 1 to 256"},
		{[]string{"consume", "--pullers", "-3"}, "--pullers -3: want 1 to 256"},
		{[]string{"horizon", "--hold-kind", "sideways"}, `--hold-kind "sideways": want writer or readers`},
		{[]string{"nope"}, `unknown benchmark "nope"`},
		{[]string{"ingest", "--loader", "curl"}, `--loader "curl": want raw or go`},
		{[]string{"scale", "--days", "9"}, "--rows 10000000 --days 9: want rows > 0 and days from 1 to 6"},
		{[]string{"ingest", "--mio", "/nonexistent/mio"}, "--mio /nonexistent/mio"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, func(string) string { return "" }, &stdout, &stderr)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr.String())
		require.Contains(t, stderr.String(), c.want, c.args)
		require.NotContains(t, stdout.String()+stderr.String(), "starting a private PostgreSQL", c.args)
	}
}
