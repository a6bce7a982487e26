package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/miohq/mio/tracing"
)

// env is how commands read the environment (os.Getenv, or a map in tests).
type env func(string) string

// usageError marks a command-line mistake (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

const usage = `mio — messaging I/O for AI agents

Usage:
  mio dev                      run everything locally (private PostgreSQL when no database URL)
  mio serve [--role all|api|worker|bridge]
                               run the production process
  mio migrate up|down|status   apply, roll back one, or list schema migrations
  mio admin ...                operator commands (tenants, accounts, tokens)
  mio top [--once] [--interval 2s] [--tenant T]
                               live terminal view over the admin listener (read-only)
  mio send-test [--text T]     send a signed test webhook to the mio dev demo account
  mio mcp                      MCP server on stdin/stdout for a desktop agent (MIO_URL, MIO_API_TOKEN)
  mio version                  version, commit and schema version

Every command accepts the configuration flags; see 'mio serve --help'.
`

func run(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "dev":
		err = cmdDev(ctx, rest, getenv, stdout, stderr)
	case "serve":
		err = cmdServe(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		err = cmdMigrate(ctx, rest, getenv, stdout, stderr)
	case "admin":
		err = cmdAdmin(ctx, rest, getenv, stdout, stderr)
	case "top":
		err = cmdTop(ctx, rest, getenv, stdout, stderr)
	case "mcp":
		err = cmdMCP(ctx, rest, getenv, os.Stdin, stdout, stderr)
	case "send-test":
		err = cmdSendTest(ctx, rest, getenv, stdout, stderr)
	case "version", "--version":
		err = cmdVersion(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "mio: unknown command %q (try 'mio help')\n", cmd)
		return 2
	}
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "mio: "+oneLine(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(tracing.LogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})))
}
