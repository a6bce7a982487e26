package main

import (
	"context"
	"io"
)

func cmdBench(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	return &usageError{"mio bench: not yet available"}
}
