package main

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/miohq/mio/config"
)

// tuneGC sets the Go collector's target and soft memory limit of a
// serving process from cfg (MIO_GC_PERCENT, MIO_MEMORY_LIMIT), unless
// GOGC or GOMEMLIMIT are set: the runtime has applied those already.
// With the default target (100) the collector took about a sixth of the
// server's CPU on the send path, where the live heap is small and the
// allocation rate high; a higher target under a soft limit trades memory
// that was idle for that CPU (docs/benchmarks.md).
func tuneGC(cfg *config.Config, log *slog.Logger) {
	gc, limit := "GOGC", "GOMEMLIMIT"
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(cfg.GCPercent)
		gc = "MIO_GC_PERCENT"
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && cfg.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimit)
		limit = "MIO_MEMORY_LIMIT"
	}
	log.Debug("go runtime memory", "gc_percent_from", gc, "memory_limit_from", limit,
		"memory_limit_bytes", debug.SetMemoryLimit(-1))
}
