package db

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"
)

// LogStart is the lo of a reader that has read nothing: no transaction is
// visible in it.
const LogStart = "1:1:"

// LogPos is a reader's position in the inbox log (consumers, the archive,
// the NATS bridge; docs/architecture.md, "Reading the log"). Every row
// whose transaction is visible in snapshot Lo has been read. While Hi is
// set, a window is open: the rows whose transaction is visible in Hi and
// not in Lo, read in stream order (xid, seq) up to and including After.
// Snapshots are PostgreSQL pg_snapshot texts ("xmin:xmax:xip,...").
//
// Readers never wait on a transaction they do not need: one still running
// is in the xip list of every snapshot, so the rows of transactions that
// committed around it are in the windows, and its own rows fall into the
// first window whose Hi sees it committed, exactly once.
type LogPos struct {
	Lo    string
	Hi    string // "" when no window is open
	After StreamPos
}

// Next is the position after reading n rows of the window (p.Lo, hi],
// asked for want, the last of them at last: when fewer than want came
// back, the window has been read to its end and hi becomes Lo; otherwise
// the window stays open at hi.
func (p LogPos) Next(hi string, last StreamPos, n, want int) LogPos {
	if n < want {
		return LogPos{Lo: hi}
	}
	return LogPos{Lo: p.Lo, Hi: hi, After: last}
}

func (p LogPos) String() string {
	if p.Hi == "" {
		return p.Lo
	}
	return fmt.Sprintf("%s..%s@%d.%d", p.Lo, p.Hi, p.After.Xid, p.After.Seq)
}

// hiArg is the SQL argument of an optional window end.
func (p LogPos) hiArg() *string {
	if p.Hi == "" {
		return nil
	}
	return &p.Hi
}

func (p StreamPos) xid8() pgtype.Uint64 { return pgtype.Uint64{Uint64: p.Xid, Valid: true} }

func (p StreamPos) xidText() string { return strconv.FormatUint(p.Xid, 10) }

// logPosFrom assembles a position from its stored columns.
func logPosFrom(lo string, hi *string, xid uint64, seq int64) LogPos {
	p := LogPos{Lo: lo, After: StreamPos{Xid: xid, Seq: seq}}
	if hi != nil {
		p.Hi = *hi
	}
	return p
}

// setCustomPlans makes the rest of the transaction plan every statement
// for its parameters, without JIT. The archive and the backlog count use
// it (they run rarely, and their estimates over a large inbox can reach
// JIT's cost thresholds, where compiling costs far more than running:
// 80 ms against 0.2 ms measured for the backlog count at 3M rows); the
// pull's statements do not: their plans are good generically
// (mio.log_ready probes ended transactions by equality), and planning each
// pull's statements anew inside the consumer's lock cost ~40 % of pull
// throughput (docs/benchmarks.md).
const setCustomPlans = "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('jit', 'off', true)"

func customPlans(ctx context.Context, tx DBTX) error {
	_, err := tx.Exec(ctx, setCustomPlans)
	return translate(err)
}
