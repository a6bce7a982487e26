package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/miohq/mio/migrations"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = ""
)

func cmdVersion(_ context.Context, _ []string, _ env, stdout, _ io.Writer) error {
	c := commit
	if c == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	schema, err := migrations.Latest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "mio %s (commit %s, schema %d)\n", version, c, schema)
	return nil
}
