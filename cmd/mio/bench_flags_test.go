package main

import (
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
		{[]string{"bench", "consume", "--pullers", "0"}, "--pullers 0: want 1 to 256"},
		{[]string{"bench", "consume", "--pullers", "-3"}, "--pullers -3: want 1 to 256"},
		{[]string{"bench", "horizon", "--hold-kind", "sideways"}, `--hold-kind "sideways": want writer or readers`},
		{[]string{"bench", "nope"}, `unknown benchmark "nope"`},
		{[]string{"bench", "ingest", "--loader", "curl"}, `--loader "curl": want raw or go`},
	} {
		r := runMio(t, nil, c.args...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.NotContains(t, r.stdout+r.stderr, "starting a private PostgreSQL", c.args)
	}
}
