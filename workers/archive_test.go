package workers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/workers"
)

// insertReady commits n ready messages (no attachments) of channel ct
// received at receivedAt, in one transaction, and returns their ids.
func (b *mediaBundle) insertReady(t testing.TB, ct string, n int, receivedAt time.Time) []uuid.UUID {
	t.Helper()
	msgs := make([]envelope.Message, n)
	for i := range msgs {
		msgs[i] = envelope.Message{SourceMessageID: uuid.NewString(), Conversation: envelope.Conversation{ID: fmt.Sprintf("c%d", i%7), Type: envelope.ConversationGroup},
			Sender: envelope.Sender{ID: "u1", DisplayName: "Ann"}, Text: fmt.Sprintf("hello\nline %d", i), SentAt: receivedAt.Add(-time.Second)}
	}
	req := ingest.Prepare(&accounts.Account{ID: b.accounts[ct], TenantID: b.tenant, ChannelType: ct},
		&channels.Parsed{Messages: msgs}, []byte("{\n  \"update_id\": 1\n}"), receivedAt)
	_, err := db.IngestCommit(context.Background(), b.env.Pool, []db.IngestGroup{{TenantID: b.tenant, Rows: req.Messages}})
	require.NoError(t, err)
	ids := make([]uuid.UUID, n)
	for i, r := range req.Messages {
		ids[i] = r.ID
	}
	return ids
}

// archived reads every NDJSON object under mio/ and returns, per message
// id, how many times it appears; it checks each line against the schema
// and its object's partition.
func archived(t *testing.T, store blob.Store, wantRaw bool) map[string]int {
	t.Helper()
	ctx := context.Background()
	schema := loadSchema(t)
	seen := map[string]int{}
	require.NoError(t, store.List(ctx, "mio/", func(info blob.Info) error {
		// mio/channel_type=<ct>/date=<d>/<part>.ndjson
		parts := strings.Split(info.Key, "/")
		require.Len(t, parts, 4, info.Key)
		ct := strings.TrimPrefix(parts[1], "channel_type=")
		day := strings.TrimPrefix(parts[2], "date=")
		require.True(t, strings.HasSuffix(parts[3], ".ndjson"))
		rc, _, err := store.Get(ctx, info.Key)
		require.NoError(t, err)
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			var obj map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &obj))
			checkLine(t, schema, obj, "")
			require.Equal(t, ct, obj["channel_type"], info.Key)
			require.True(t, strings.HasPrefix(obj["received_at"].(string), day), "%s in %s", obj["received_at"], info.Key)
			if wantRaw {
				require.Equal(t, map[string]any{"update_id": float64(1)}, obj["raw"], "raw JSON is archived")
			}
			seen[obj["id"].(string)]++
		}
		require.NoError(t, sc.Err())
		return nil
	}))
	return seen
}

// 10k messages across two channels and two days land in the right
// partitions exactly once, although the run crashes after writing a
// batch's objects and before committing its cursor, and is then rerun.
func TestArchiveCrashRetryExactlyOncePerBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	day1 := time.Date(2024, 3, 9, 23, 30, 0, 123456789, time.UTC)
	day2 := day1.Add(time.Hour)
	var ids []uuid.UUID
	for _, ct := range []string{envelope.ChannelTelegram, envelope.ChannelWebhook} {
		for _, at := range []time.Time{day1, day2} {
			for range 5 {
				ids = append(ids, b.insertReady(t, ct, 500, at)...)
			}
		}
	}
	require.Len(t, ids, 10_000)

	m := metrics.NewMedia(nil)
	// Objects are spooled to files past their first 4 KiB: what is
	// written is what was read, and no file is left, crash or not.
	spoolDir := t.TempDir()
	w := &workers.ArchiveWorker{Pool: b.env.Pool, Blob: store, Metrics: m, BatchRows: 3000, MaxAge: time.Nanosecond, SpoolDir: spoolDir}
	w.SetSpoolMemory(4096)
	var batches atomic.Int32
	crash := errors.New("simulated crash")
	w.SetAfterWrite(func(uuid.UUID) error {
		if batches.Add(1) == 2 {
			return crash
		}
		return nil
	})
	n, err := w.ArchiveTenant(ctx, b.tenant)
	require.ErrorIs(t, err, crash)
	require.Equal(t, 3000, n, "the first batch committed, the second crashed before its cursor")
	require.Equal(t, 3000, b.countArchived(t))

	// More messages arrive before the rerun: they sort after the crashed
	// batch, which is rewritten under the same names.
	ids = append(ids, b.insertReady(t, envelope.ChannelWebhook, 5, day2)...)
	w.SetAfterWrite(nil)
	n, err = w.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	require.Equal(t, 7005, n)
	require.Equal(t, 10_005, b.countArchived(t))

	seen := archived(t, store, true)
	require.Len(t, seen, len(ids))
	for _, id := range ids {
		require.Equal(t, 1, seen[id.String()], "message %s archived exactly once", id)
	}
	require.Equal(t, float64(5000), testutil.ToFloat64(m.ArchiveMessages.WithLabelValues(envelope.ChannelTelegram)))
	require.Equal(t, float64(5005), testutil.ToFloat64(m.ArchiveMessages.WithLabelValues(envelope.ChannelWebhook)))
	require.Positive(t, testutil.ToFloat64(m.ArchiveBytes.WithLabelValues(envelope.ChannelWebhook)))

	// Nothing is left: a further run writes nothing.
	n, err = w.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	require.Zero(t, n)
	left, err := os.ReadDir(spoolDir)
	require.NoError(t, err)
	require.Empty(t, left, "spool files are removed")
}

func (b *mediaBundle) countArchived(t testing.TB) int {
	t.Helper()
	var n int
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM mio.inbox AS i JOIN mio.archive_cursors AS c ON c.tenant_id = i.tenant_id
			WHERE i.ready_xid IS NOT NULL AND mio.log_read(i.ready_xid, i.ready_seq, c.log_lo, c.log_hi, c.ready_xid, c.ready_seq)`).Scan(&n)
	}))
	return n
}

// A message made ready by a transaction that commits after a later one
// is not skipped, and does not hold the later one back: the archive reads
// the log in snapshot windows (db.LogPos).
func TestArchiveNeverSkipsLateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	w := &workers.ArchiveWorker{Pool: b.env.Pool, Blob: store, BatchRows: 100, MaxAge: time.Nanosecond}

	// Transaction A makes a message ready first but commits last.
	slow, err := db.BeginTenant(ctx, b.env.Pool, b.tenant)
	require.NoError(t, err)
	defer slow.Rollback(ctx) //nolint:errcheck
	msg := envelope.Message{SourceMessageID: "late", Conversation: envelope.Conversation{ID: "c", Type: "dm"}, Sender: envelope.Sender{ID: "u"}}
	req := ingest.Prepare(&accounts.Account{ID: b.accounts[envelope.ChannelWebhook], TenantID: b.tenant, ChannelType: envelope.ChannelWebhook},
		&channels.Parsed{Messages: []envelope.Message{msg}}, nil, time.Now())
	_, err = db.InboxInsertBatch(ctx, slow, b.tenant, req.Messages)
	require.NoError(t, err)

	early := b.insertReady(t, envelope.ChannelWebhook, 3, time.Now())
	n, err := w.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	require.Equal(t, 3, n, "the committed rows are archived while the older transaction is still open")

	require.NoError(t, slow.Commit(ctx))
	n, err = w.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the late commit is archived once it commits")
	n, err = w.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	require.Zero(t, n, "and only once")
	seen := archived(t, store, false)
	for _, id := range append(early, req.Messages[0].ID) {
		require.Equal(t, 1, seen[id.String()])
	}
}

// A partial batch waits for MaxAge; a full one is written at once.
func TestArchiveBatchThresholds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	now := time.Now()
	w := &workers.ArchiveWorker{Pool: b.env.Pool, Blob: store, BatchRows: 10, MaxAge: time.Hour, Now: func() time.Time { return now }}
	b.insertReady(t, envelope.ChannelTelegram, 15, time.Now())

	n, err := w.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	require.Equal(t, 10, n, "one full batch; the 5 left are young")

	now = now.Add(2 * time.Hour)
	n, err = w.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	require.Equal(t, 5, n, "old enough now")

	var objects int
	require.NoError(t, store.List(ctx, "mio/", func(blob.Info) error { objects++; return nil }))
	require.Equal(t, 2, objects)
}
