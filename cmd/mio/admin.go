package main

import (
	"context"
	"io"
)

func cmdAdmin(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	return &usageError{"mio admin: not yet available"}
}

func cmdBench(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	return &usageError{"mio bench: not yet available"}
}
