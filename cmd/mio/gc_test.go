package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/config"
)

// TestTuneGC: MIO_GC_PERCENT and MIO_MEMORY_LIMIT apply unless GOGC and
// GOMEMLIMIT are set, which the Go runtime has applied and which win.
func TestTuneGC(t *testing.T) {
	// Process-wide settings: not parallel; restored after.
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })
	unset := func(k string) {
		if v, ok := os.LookupEnv(k); ok {
			t.Cleanup(func() { os.Setenv(k, v) })
		}
		os.Unsetenv(k)
	}
	log := slog.New(slog.DiscardHandler)
	cfg := &config.Config{GCPercent: 400, MemoryLimit: 96 << 20}

	unset("GOGC")
	unset("GOMEMLIMIT")
	debug.SetMemoryLimit(1 << 40)
	tuneGC(cfg, log)
	require.Equal(t, 400, debug.SetGCPercent(100), "MIO_GC_PERCENT applies")
	require.Equal(t, int64(96<<20), debug.SetMemoryLimit(1<<40), "MIO_MEMORY_LIMIT applies")

	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(150)
	tuneGC(cfg, log)
	require.Equal(t, 150, debug.SetGCPercent(100), "GOGC wins")
	require.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1), "GOMEMLIMIT wins")
}
