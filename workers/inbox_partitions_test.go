package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/workers"
)

// The partitions job creates the days ahead; retention drops an old day
// whole once its messages are archived, and keeps it before.
func TestInboxPartitionsCreatedAheadAndDroppedWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	now := time.Now().AddDate(0, 0, 30) // days no migration created
	pw := &workers.InboxPartitionsWorker{Pool: b.env.Pool, Ahead: 3, Now: func() time.Time { return now }}
	require.NoError(t, pw.Work(ctx, &river.Job[workers.InboxPartitionsArgs]{}))
	parts, err := db.InboxPartitionList(ctx, b.env.Pool)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, p := range parts {
		names[p.Name] = true
	}
	for d := range 4 {
		require.True(t, names[db.InboxPartitionName(now.AddDate(0, 0, d))], "day +%d", d)
	}

	// A message accepted 10 days ago, in its own day partition.
	old := time.Now().Add(-10 * 24 * time.Hour)
	_, err = db.InboxPartitionsEnsure(ctx, b.env.Pool, old, old)
	require.NoError(t, err)
	id := uuid.Must(uuid.NewV7())
	floor := db.IDFloor(old)
	copy(id[0:6], floor[0:6])
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, conversation_id, source_message_id, state, envelope,
                       received_at, ready_xid, ready_seq, ready_at)
VALUES ($1, $2, $3, 'webhook', 'c', 'old', 'ready', '{"text":"old"}', $4, pg_current_xact_id(), nextval('mio.inbox_ready_seq'), $4)`,
			b.tenant, id, b.accounts[envelope.ChannelWebhook], old)
		return err
	}))
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	rw := &workers.RetentionWorker{Pool: b.env.Pool, Blob: store, InboxRetention: 7 * 24 * time.Hour}
	_, err = rw.PruneInbox(ctx)
	require.NoError(t, err)
	require.True(t, b.exists(t, id), "not archived: kept")

	aw := &workers.ArchiveWorker{Pool: b.env.Pool, Blob: store, MaxAge: time.Nanosecond}
	_, err = aw.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	_, err = rw.PruneInbox(ctx)
	require.NoError(t, err)
	require.False(t, b.exists(t, id))
	parts, err = db.InboxPartitionList(ctx, b.env.Pool)
	require.NoError(t, err)
	for _, p := range parts {
		require.NotEqual(t, db.InboxPartitionName(old), p.Name, "the day was dropped")
	}
}
