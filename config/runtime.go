package config

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// Collector defaults of a server process (mio serve, mio dev), applied by
// TuneRuntime where the operator has not set Go's own GOGC or GOMEMLIMIT.
const (
	// DefaultGCPercent is the collector's GOGC. MIO's live heap is small
	// (~10 MB) and every webhook or send allocates ~25 KB that dies with
	// its request, so at Go's 100 the collector ran some 25 times a
	// second and took ~20 % of the server's CPU at 32 clients; at 400 the
	// server spends 20-25 % less CPU a request (mio-bench ingest) for a
	// heap of a few tens of MB more.
	DefaultGCPercent = 400
	// MemoryLimitShare is the part of a cgroup's memory limit (a
	// container's) set as the soft memory limit, so that the heap GOGC
	// lets grow is collected before the container would be killed. The
	// rest is left to what the limit counts beyond Go's own memory (the
	// binary's mapped pages, the kernel's buffers of the process).
	MemoryLimitShare = 0.8
)

// Runtime is how TuneRuntime sets the collector.
type Runtime struct {
	// GCPercent is the GOGC set: DefaultGCPercent, or 0 when the
	// operator's GOGC is in effect (OperatorGOGC).
	GCPercent    int
	OperatorGOGC bool
	// MemoryLimit is the soft memory limit set, in bytes: 0 when none is
	// (no cgroup limit, or the operator's GOMEMLIMIT in effect).
	MemoryLimit        int64
	OperatorGOMEMLIMIT bool
	// CgroupLimit is the cgroup memory limit found, 0 when none.
	CgroupLimit int64
}

// String describes the settings for a log line.
func (r Runtime) String() string {
	var b strings.Builder
	if r.OperatorGOGC {
		b.WriteString("GOGC from the environment")
	} else {
		fmt.Fprintf(&b, "GOGC=%d (MIO's default)", r.GCPercent)
	}
	switch {
	case r.OperatorGOMEMLIMIT:
		b.WriteString(", GOMEMLIMIT from the environment")
	case r.MemoryLimit > 0:
		fmt.Fprintf(&b, ", memory limit %d MiB (%.0f%% of the cgroup's %d MiB)", r.MemoryLimit>>20, MemoryLimitShare*100, r.CgroupLimit>>20)
	default:
		b.WriteString(", no memory limit (no cgroup memory limit found)")
	}
	return b.String()
}

// RuntimeSettings decides the collector's settings from the environment
// and the process's cgroup files (read with readFile), without applying
// them. A GOGC or GOMEMLIMIT the operator set is left to Go.
func RuntimeSettings(getenv func(string) string, readFile func(string) ([]byte, error)) Runtime {
	var r Runtime
	if getenv("GOGC") != "" {
		r.OperatorGOGC = true
	} else {
		r.GCPercent = DefaultGCPercent
	}
	if getenv("GOMEMLIMIT") != "" {
		r.OperatorGOMEMLIMIT = true
		return r
	}
	if limit := cgroupMemoryLimit(readFile); limit > 0 {
		r.CgroupLimit = limit
		r.MemoryLimit = int64(float64(limit) * MemoryLimitShare)
	}
	return r
}

// TuneRuntime applies RuntimeSettings to the running process and returns
// them. Call it once, at the start of a server command.
func TuneRuntime(getenv func(string) string, readFile func(string) ([]byte, error)) Runtime {
	r := RuntimeSettings(getenv, readFile)
	if !r.OperatorGOGC {
		debug.SetGCPercent(r.GCPercent)
	}
	if r.MemoryLimit > 0 {
		debug.SetMemoryLimit(r.MemoryLimit)
	}
	return r
}

// cgroupMemoryLimit is the smallest memory limit of the process's cgroup
// and its ancestors (cgroup v2), or of its memory cgroup (v1); 0 when
// there is none or it cannot be read.
func cgroupMemoryLimit(readFile func(string) ([]byte, error)) int64 {
	self, err := readFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	var v2, v1 string
	found2, found1 := false, false
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, found2 = parts[2], true
		case hasController(parts[1], "memory"):
			v1, found1 = parts[2], true
		}
	}
	var limit int64
	lower := func(v int64) {
		if v > 0 && (limit == 0 || v < limit) {
			limit = v
		}
	}
	if found1 {
		// In a container the memory hierarchy is mounted at its own
		// cgroup: the path names the host's view, the root holds ours.
		lower(readLimit(readFile, path.Join("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes")))
		lower(readLimit(readFile, "/sys/fs/cgroup/memory/memory.limit_in_bytes"))
	}
	if found2 {
		for dir := path.Clean("/" + v2); ; dir = path.Dir(dir) {
			lower(readLimit(readFile, path.Join("/sys/fs/cgroup", dir, "memory.max")))
			if dir == "/" {
				break
			}
		}
	}
	return limit
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads one limit file: "max" (v2) or a value of 2^62 and more
// (v1's "unlimited") is no limit.
func readLimit(readFile func(string) ([]byte, error), name string) int64 {
	b, err := readFile(name)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "" || s == "max" {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v >= 1<<62 || v > math.MaxInt64 {
		return 0
	}
	return int64(v)
}
