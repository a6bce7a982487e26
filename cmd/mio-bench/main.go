// Command mio-bench runs MIO's benchmarks, each against its reference
// measured in the same run (pgbench, River's own no-op jobs, a raw NATS
// publish), with a mio binary as the server in a process of its own.
//
// It is a module of its own so that the server binary links none of it: no
// load generators, no in-process NATS server, no pgbench orchestration.
// See docs/benchmarks.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// usageError marks a command-line mistake (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// benchmarks are the names mio-bench runs.
var benchmarks = []string{"ingest", "produce", "consume", "dispatch", "dispatch-webhook", "horizon", "bridge", "sdk", "mcp", "admin", "scale", "stream"}

const usage = `mio-bench — MIO's benchmarks, each with its reference measured in the same run

Usage:
  mio-bench ingest|produce|consume|dispatch|dispatch-webhook|horizon|bridge|sdk|mcp|admin|scale|stream [flags]

Each starts a private PostgreSQL unless MIO_DATABASE_URL is set, and runs
'mio serve' (the mio binary beside mio-bench, on PATH, or --mio) as the
server. Run a benchmark alone on a quiet machine; see docs/benchmarks.md.
'mio-bench NAME --help' lists a benchmark's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	var err error
	if !slices.Contains(benchmarks, args[0]) {
		err = &usageError{fmt.Sprintf("unknown benchmark %q: want %s", args[0], strings.Join(benchmarks, ", "))}
	} else {
		err = runBench(ctx, args, getenv, stdout, stderr)
	}
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "mio-bench: "+strings.Join(strings.Fields(err.Error()), " "))
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
