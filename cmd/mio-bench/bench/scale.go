package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// ScaleOptions configure the scale benchmark.
type ScaleOptions struct {
	// Rows of history loaded into the inbox (default 10,000,000), spread
	// evenly over Days past UTC days (default 5, at most 6: inside the
	// default 7-day retention, so the server's own retention leaves them).
	Rows int
	Days int
	// Ingest: Clients (default 32), Duration (default 10s), Warmup (2s).
	Clients  int
	Duration time.Duration
	Warmup   time.Duration
	// Drain: messages pulled and acked per phase (default 400,000) by
	// Pullers (default 8) in batches of Batch (default 100). At about
	// 35,000 msg/s a drain of 100,000 lasts under 3 s, and the ratio of two
	// such drains ranged 0.86–1.45 over three quiet runs; over seven runs
	// of 400,000 (about 11 s) it ranged 0.87–0.95 (docs/benchmarks.md).
	Drain   int
	Pullers int
	Batch   int
}

// ScaleResult holds the figures of one run.
type ScaleResult struct {
	Rows, Days                int
	Load                      time.Duration
	IngestEmpty, IngestFull   float64 // accepted/s
	ConsumeEmpty, ConsumeFull float64 // pulled+acked msg/s
	// Sizes measured around the empty-table ingest phase: disk (inbox
	// partitions and dedup keys, indexes and TOAST included) and WAL per
	// accepted message.
	Accepted              int64
	DiskPerMsg, WALPerMsg float64
	// KeysPerMsg is the part of DiskPerMsg in mio.inbound_dedup and
	// mio.inbound_refs (kept for MIO_DEDUP_RETENTION, not the inbox's).
	KeysPerMsg float64
	// DrainWALPerMsg is the WAL per message pulled and acked (empty table).
	DrainWALPerMsg float64
	// The oldest history day dropped (mio.inbox_partition_retire: the
	// archived check, attachments, DETACH, DROP) and a DELETE of the next
	// day's rows (the same count) measured beside it.
	DropPartition string
	DropRows      int64
	Drop          time.Duration
	DeleteRows    int64
	Delete        time.Duration
}

// Scale measures webhook ingest and pull+ack on an empty inbox, loads
// opts.Rows of history into past day partitions, measures both again,
// then times dropping a day's partition against deleting a day's rows.
// It needs a database whose inbox holds no day older than the history
// (a private one): the drop retires the oldest day.
func Scale(ctx context.Context, env *Env, opts ScaleOptions) (*ScaleResult, error) {
	opts.defaults()
	res := &ScaleResult{Rows: opts.Rows, Days: opts.Days}
	cs, err := newConsumerSetup(ctx, env, "bench-scale")
	if err != nil {
		return nil, err
	}
	defer cs.pool.Close()
	ingest := IngestOptions{Clients: opts.Clients, Duration: opts.Duration, Warmup: opts.Warmup, SkipPgbench: true}

	fmt.Fprintf(env.out, "empty inbox: ingest, then pull+ack of %d\n", opts.Drain)
	disk0, keys0, wal0, err := sizes(ctx, env)
	if err != nil {
		return nil, err
	}
	in, err := Ingest(ctx, env, ingest)
	if err != nil {
		return nil, err
	}
	disk1, keys1, wal1, err := sizes(ctx, env)
	if err != nil {
		return nil, err
	}
	res.IngestEmpty, res.Accepted = in.PerSec, in.Accepted
	if in.Accepted > 0 {
		res.DiskPerMsg = float64(disk1-disk0) / float64(in.Accepted)
		res.WALPerMsg = float64(wal1-wal0) / float64(in.Accepted)
		res.KeysPerMsg = float64(keys1-keys0) / float64(in.Accepted)
	}
	if err := preload(ctx, env, cs.tenant.ID, cs.account.ID, opts.Drain); err != nil {
		return res, err
	}
	_, _, wal0, err = sizes(ctx, env)
	if err != nil {
		return res, err
	}
	if res.ConsumeEmpty, err = scaleDrain(ctx, env, cs, opts, false); err != nil {
		return res, err
	}
	if _, _, wal1, err = sizes(ctx, env); err != nil {
		return res, err
	}
	res.DrainWALPerMsg = float64(wal1-wal0) / float64(opts.Drain)

	fmt.Fprintf(env.out, "loading %d rows of history over %d days\n", opts.Rows, opts.Days)
	began := time.Now()
	if err := loadHistory(ctx, env, cs, opts.Rows, opts.Days); err != nil {
		return res, err
	}
	res.Load = time.Since(began)
	// The consumer skips the history (as a consumer created before it
	// would have read it already).
	if err := db.InTenantTx(ctx, cs.pool, cs.tenant.ID, func(tx pgx.Tx) error {
		_, err := db.ConsumerSeek(ctx, tx, cs.tenant.ID, "bench", time.Now())
		return err
	}); err != nil {
		return res, fmt.Errorf("seek past history: %w", err)
	}

	fmt.Fprintf(env.out, "%d rows of history: ingest, then pull+ack of %d\n", opts.Rows, opts.Drain)
	if in, err = Ingest(ctx, env, ingest); err != nil {
		return res, err
	}
	res.IngestFull = in.PerSec
	if res.ConsumeFull, err = scaleDrain(ctx, env, cs, opts, true); err != nil {
		return res, err
	}
	return res, dropVersusDelete(ctx, env, cs, opts, res)
}

func (o *ScaleOptions) defaults() {
	if o.Rows <= 0 {
		o.Rows = 10_000_000
	}
	if o.Days <= 0 {
		o.Days = 5
	}
	o.Days = min(o.Days, 6)
	if o.Drain <= 0 {
		o.Drain = 400_000
	}
	if o.Pullers <= 0 {
		o.Pullers = 8
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
}

// scaleDrain preloads opts.Drain ready messages (archived) when asked and
// returns the pull+ack rate of draining them.
func scaleDrain(ctx context.Context, env *Env, cs *consumerSetup, opts ScaleOptions, load bool) (float64, error) {
	if load {
		if err := preload(ctx, env, cs.tenant.ID, cs.account.ID, opts.Drain); err != nil {
			return 0, err
		}
	}
	n, elapsed, _, err := drain(ctx, cs.client, "bench", opts.Drain, opts.Pullers, opts.Batch)
	if err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

// sizes returns the bytes on disk of the inbox and the dedup keys and
// edit references together, of the keys alone, and the WAL position.
func sizes(ctx context.Context, env *Env) (disk, keys, wal int64, err error) {
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `
		SELECT (SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('mio.inbox'))::bigint,
		       pg_total_relation_size('mio.inbound_dedup') + pg_total_relation_size('mio.inbound_refs'),
		       pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&disk, &keys, &wal)
	return disk + keys, keys, wal, err
}

// uuidV7SQL is an SQL expression for a UUIDv7 (random bits) of time t.
func uuidV7SQL(t string) string {
	return `(lpad(to_hex(floor(extract(epoch FROM ` + t + `) * 1000)::bigint), 12, '0') || '7' ||
	         substr(md5(random()::text), 1, 3) || '8' || substr(md5(random()::text), 1, 15))::uuid`
}

// historyDay is the UTC day i+1 days before now (i from 0).
func historyDay(i int) time.Time {
	d := time.Now().UTC().AddDate(0, 0, -(i + 1))
	return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
}

// loadHistory inserts rows ready messages of the consumer's tenant and
// account into the partitions of the days past days, evenly spread over
// each day, in statements of at most 250k rows, then marks them archived
// and analyzes the inbox.
func loadHistory(ctx context.Context, env *Env, cs *consumerSetup, rows, days int) error {
	if err := env.Exec(ctx, fmt.Sprintf("SELECT mio.inbox_partitions_ensure('%s', '%s')",
		historyDay(days-1).Format(time.DateOnly), historyDay(0).Format(time.DateOnly))); err != nil {
		return fmt.Errorf("history partitions: %w", err)
	}
	perDay := rows / days
	for i := range days {
		n := perDay
		if i == 0 {
			n += rows % days
		}
		day := historyDay(i)
		for done := 0; done < n; done += 250_000 {
			k := min(250_000, n-done)
			at := fmt.Sprintf("('%s'::timestamptz + (%d + g) * interval '86399 seconds' / %d)", day.Format(time.RFC3339), done, n)
			err := env.Exec(ctx, fmt.Sprintf(`
				SELECT set_config('app.current_tenant_id', '%[1]s', false);
				INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, source_message_id, conversation_id, state, envelope, received_at, ready_xid, ready_seq, ready_at)
				SELECT '%[1]s', h.id, '%[2]s', 'webhook', 'hist-' || h.id, 'conv-' || (h.g %% 100), 'ready',
				       jsonb_build_object('id', h.id, 'tenant_id', '%[1]s', 'account_id', '%[2]s', 'channel_type', 'webhook',
				         'source_message_id', 'hist-' || h.id, 'conversation', jsonb_build_object('id', 'conv-' || (h.g %% 100), 'type', 'dm'),
				         'sender', jsonb_build_object('id', 'u1', 'is_bot', false), 'text', repeat('x', 300), 'attachments', '[]'::jsonb,
				         'edited', false, 'deleted', false),
				       h.at, pg_current_xact_id(), nextval('mio.inbox_ready_seq'), h.at
				FROM (SELECT g, %[3]s AS at, `+uuidV7SQL(at)+` AS id FROM generate_series(0, %[4]d) AS g) AS h`,
				cs.tenant.ID, cs.account.ID, at, k-1))
			if err != nil {
				return fmt.Errorf("history: %w", err)
			}
		}
		fmt.Fprintf(env.out, "  %s: %d rows\n", db.InboxPartitionName(day), n)
	}
	if err := env.Exec(ctx, fmt.Sprintf(`
		INSERT INTO mio.archive_cursors (tenant_id, log_lo) VALUES ('%[1]s', pg_current_snapshot())
		ON CONFLICT (tenant_id) DO UPDATE SET log_lo = excluded.log_lo, log_hi = NULL, ready_xid = '0', ready_seq = 0`,
		cs.tenant.ID)); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	// Settle the load as days of history would be: vacuumed (hint bits,
	// visibility map, frozen) and checkpointed. Measured right after a bulk
	// load instead, the second phase pays the load's aftermath — its dirty
	// buffers flushed by the checkpointer and backends, autovacuum and
	// BRIN summarizing of the new partitions — not the table's size.
	if err := env.Exec(ctx, "VACUUM (FREEZE, ANALYZE) mio.inbox"); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := env.Exec(ctx, "CHECKPOINT"); err != nil {
		fmt.Fprintf(env.out, "  (no CHECKPOINT after the load: %v)\n", err)
	}
	return waitAutovacuum(ctx, env, time.Minute)
}

// waitAutovacuum waits up to limit for autovacuum workers of this
// database to finish.
func waitAutovacuum(ctx context.Context, env *Env, limit time.Duration) error {
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(limit)
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND backend_type = 'autovacuum worker'`).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(env.out, "  (%d autovacuum workers still running after %s)\n", n, limit)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// dropVersusDelete retires the oldest history day (as retention does) and
// deletes the next day's rows with one DELETE, timing both.
func dropVersusDelete(ctx context.Context, env *Env, cs *consumerSetup, opts ScaleOptions, res *ScaleResult) error {
	oldest, next := historyDay(opts.Days-1), historyDay(opts.Days-2)
	parts, err := db.InboxPartitionList(ctx, cs.pool)
	if err != nil {
		return err
	}
	if len(parts) == 0 || parts[0].Name != db.InboxPartitionName(oldest) {
		return fmt.Errorf("drop: the oldest inbox partition is not the history's %s: run on a private database", db.InboxPartitionName(oldest))
	}
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	began := time.Now()
	r, ok, err := db.InboxPartitionRetire(ctx, conn, oldest.AddDate(0, 0, 1))
	res.Drop = time.Since(began)
	if err != nil {
		return fmt.Errorf("drop: %w", err)
	}
	if !ok {
		return fmt.Errorf("drop: %s was not retired", db.InboxPartitionName(oldest))
	}
	res.DropPartition, res.DropRows = r.Name, r.Messages
	if opts.Days < 2 {
		return nil
	}
	if _, err := conn.Exec(ctx, "SELECT set_config('app.current_tenant_id', $1, false)", cs.tenant.ID.String()); err != nil {
		return err
	}
	began = time.Now()
	tag, err := conn.Exec(ctx, `DELETE FROM mio.inbox WHERE tenant_id = $1
		AND id >= mio.uuid_time_floor($2) AND id < mio.uuid_time_floor($3)`, cs.tenant.ID, next, next.AddDate(0, 0, 1))
	res.Delete = time.Since(began)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	res.DeleteRows = tag.RowsAffected()
	return nil
}

// Print writes the result as a small report.
func (r *ScaleResult) Print(w io.Writer) {
	ratio := func(full, empty float64) string {
		if empty == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", full/empty)
	}
	fmt.Fprintf(w, "mio-bench scale — %d rows of history over %d day partitions (loaded in %s)\n", r.Rows, r.Days, r.Load.Round(time.Second))
	fmt.Fprintf(w, "  %-22s %12s %12s %8s\n", "", "empty", "history", "ratio")
	fmt.Fprintf(w, "  %-22s %12.0f %12.0f %8s   (target >= 0.90)\n", "ingest accepted/s", r.IngestEmpty, r.IngestFull, ratio(r.IngestFull, r.IngestEmpty))
	fmt.Fprintf(w, "  %-22s %12.0f %12.0f %8s   (target >= 0.90)\n", "pull+ack msg/s", r.ConsumeEmpty, r.ConsumeFull, ratio(r.ConsumeFull, r.ConsumeEmpty))
	fmt.Fprintf(w, "  drop %s (~%d rows)  %10s   (target < 1s)\n", r.DropPartition, r.DropRows, r.Drop.Round(time.Millisecond))
	fmt.Fprintf(w, "  DELETE of a day (%d rows) %10s\n", r.DeleteRows, r.Delete.Round(time.Millisecond))
	fmt.Fprintf(w, "sizes per accepted webhook message (empty-table ingest, %d messages; valid on a loaded machine):\n", r.Accepted)
	fmt.Fprintf(w, "  disk (inbox + dedup + refs, indexes)  %8.0f B (dedup + refs: %.0f B)\n", r.DiskPerMsg, r.KeysPerMsg)
	fmt.Fprintf(w, "  WAL (all of the cluster's)            %8.0f B\n", r.WALPerMsg)
	fmt.Fprintf(w, "  WAL per message pulled and acked      %8.0f B\n", r.DrainWALPerMsg)
	fmt.Fprintln(w, strings.Repeat("-", 60))
}
