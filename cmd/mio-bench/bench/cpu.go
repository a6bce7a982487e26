package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// cpuSnap is a point-in-time reading of cumulative CPU time: the whole
// machine's busy and idle time, the server process's, and this process's
// (the load generator's).
type cpuSnap struct {
	ok             bool
	busy, idle     time.Duration
	server, loader time.Duration
}

// cpuUse is the CPU spent between two snapshots.
type cpuUse struct {
	ok             bool
	busy, idle     time.Duration
	server, loader time.Duration
}

// rest is the machine's busy time outside the server and the load
// generator: PostgreSQL, and whatever else ran (on a quiet machine,
// PostgreSQL).
func (u cpuUse) rest() time.Duration { return max(u.busy-u.server-u.loader, 0) }

func (a cpuSnap) to(b cpuSnap) cpuUse {
	if !a.ok || !b.ok {
		return cpuUse{}
	}
	return cpuUse{ok: true, busy: b.busy - a.busy, idle: b.idle - a.idle, server: b.server - a.server, loader: b.loader - a.loader}
}

// cpuSnapshot reads the machine's, the server's (pid) and this process's
// CPU time. It reports !ok where /proc is not there (not Linux).
func cpuSnapshot(pid int) cpuSnap {
	var s cpuSnap
	busy, idle, err := machineCPU()
	if err != nil {
		return s
	}
	server, err := processCPU(pid)
	if err != nil {
		return s
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return s
	}
	s.ok, s.busy, s.idle, s.server = true, busy, idle, server
	s.loader = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return s
}

// machineCPU sums /proc/stat's first line: busy (user, nice, system, irq,
// softirq, steal) and idle (idle, iowait) time.
func machineCPU() (busy, idle time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks [8]int64
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
	}
	// user nice system idle iowait irq softirq steal
	b0 := ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
	i0 := ticks[3] + ticks[4]
	return time.Duration(b0) * time.Second / userHZ, time.Duration(i0) * time.Second / userHZ, nil
}

// processCPU reads a process's user+system time from /proc/pid/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: malformed times", pid)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// printCPU writes where the machine's CPU went per request of a phase
// that completed n requests: the server, the load generator (this
// process's HTTP clients), and the rest (PostgreSQL on a quiet machine),
// with the idle time left.
func printCPU(w io.Writer, label string, u cpuUse, n int64) {
	if per, idle, ok := u.perOp(n); ok {
		fmt.Fprintf(w, "  CPU µs per %-7s server %.0f, load generator %.0f, postgres and the rest %.0f; machine %.0f busy, %.0f%% idle\n",
			label, per(u.server), per(u.loader), per(u.rest()), per(u.busy), idle)
	}
}

// printReferenceCPU is printCPU for a pgbench reference phase: pgbench's
// own client time, and the rest (PostgreSQL).
func printReferenceCPU(w io.Writer, u cpuUse, tx int64) {
	if per, idle, ok := u.perOp(tx); ok {
		fmt.Fprintf(w, "  CPU µs per tx      pgbench client %.0f, postgres and the rest %.0f; machine %.0f busy, %.0f%% idle\n",
			per(u.loader), per(u.rest()), per(u.busy), idle)
	}
}

// perOp returns a converter from CPU time to µs per one of n operations,
// and the idle share of the machine in percent; !ok when there is nothing
// to print.
func (u cpuUse) perOp(n int64) (per func(time.Duration) float64, idle float64, ok bool) {
	if !u.ok || n <= 0 {
		return nil, 0, false
	}
	if total := u.busy + u.idle; total > 0 {
		idle = 100 * float64(u.idle) / float64(total)
	}
	return func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }, idle, true
}

// groupSnap is a reading of a group committer's histograms on the
// server's /metrics: batches, requests in them, and seconds in their
// transactions.
type groupSnap struct {
	ok                bool
	batches, requests float64
	seconds           float64
}

// groupNow reads the histograms mio_<name>_batch_requests and
// mio_<name>_commit_seconds (name: ingest or outbound).
func (e *Env) groupNow(ctx context.Context, name string) groupSnap {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.AdminURL+"/metrics", nil)
	if err != nil {
		return groupSnap{}
	}
	req.Header.Set("Authorization", "Bearer "+e.ProfileToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return groupSnap{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return groupSnap{}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return groupSnap{}
	}
	var s groupSnap
	found := 0
	for line := range strings.Lines(string(body)) {
		metric, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch metric {
		case "mio_" + name + "_batch_requests_count":
			s.batches = v
			found++
		case "mio_" + name + "_batch_requests_sum":
			s.requests = v
			found++
		case "mio_" + name + "_commit_seconds_sum":
			s.seconds = v
			found++
		}
	}
	s.ok = found == 3
	return s
}

// printGroup writes a phase's group commits: their average size and
// transaction time.
func printGroup(w io.Writer, a, b groupSnap) {
	n := b.batches - a.batches
	if !a.ok || !b.ok || n <= 0 {
		return
	}
	fmt.Fprintf(w, "  group commit       %.0f transactions, %.1f requests each, %.2f ms each\n",
		n, (b.requests-a.requests)/n, 1000*(b.seconds-a.seconds)/n)
}
