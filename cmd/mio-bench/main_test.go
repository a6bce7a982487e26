package main

import (
	"bytes"
	"context"
	"testing"
	"time"

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
		{[]string{"dispatch-webhook", "--sends", "0"}, "--sends 0: want at least 1"},
		{[]string{"dispatch-webhook", "--clients", "-1"}, "--clients -1: want 0 or more"},
		{[]string{"dispatch-webhook", "--lanes", "-1"}, "--lanes -1: want 0 (one conversation a send) or more"},
		{[]string{"dispatch-webhook", "--loader", "curl"}, `--loader "curl": want raw or go`},
		{[]string{"stream", "--streams", "0"}, "--streams 0 --stream-rate 10 --stream-for 30s: want each above 0"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, func(string) string { return "" }, &stdout, &stderr)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr.String())
		require.Contains(t, stderr.String(), c.want, c.args)
		require.NotContains(t, stdout.String()+stderr.String(), "starting a private PostgreSQL", c.args)
	}
}

// TestDispatchWebhookFlags: dispatch-webhook's webhook clients post only
// when --clients is given (the flag's default of 32 is the other
// benchmarks'), in any spelling of the flag.
func TestDispatchWebhookFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args    []string
		parsed  int // --clients as the flag set reads it (default 32)
		clients int
	}{
		{nil, 32, 0},
		{[]string{"--sends", "500"}, 32, 0},
		{[]string{"--clients", "32"}, 32, 32},
		{[]string{"-clients=8"}, 8, 8},
		{[]string{"--clients=0"}, 0, 0},
	} {
		o := dispatchWebhookOptions(c.args, c.parsed, 500, 16, "raw", true, time.Second, "cpu.prof", "")
		require.Equal(t, c.clients, o.Clients, c.args)
		require.Equal(t, 500, o.Sends)
		require.Equal(t, 16, o.Lanes)
		require.True(t, o.SkipReference)
		require.Equal(t, time.Second, o.Warmup)
		require.Equal(t, "cpu.prof", o.CPUProfile)
	}
}
