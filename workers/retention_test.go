package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/workers"
)

func (b *mediaBundle) exists(t testing.TB, id uuid.UUID) bool {
	t.Helper()
	var n int
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "SELECT count(*) FROM mio.inbox WHERE id = $1", id).Scan(&n)
	}))
	return n == 1
}

// Retention deletes old archived messages only: an old message that is
// not archived yet (ready but behind the archive, or still waiting for its
// attachments) is kept.
func TestRetentionNeverDeletesUnarchived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	old := time.Now().Add(-10 * 24 * time.Hour)

	archivedOld := b.insertReady(t, envelope.ChannelWebhook, 30, old)
	aw := &workers.ArchiveWorker{Pool: b.env.Pool, Blob: store, MaxAge: time.Nanosecond}
	n, err := aw.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	require.Equal(t, 30, n)
	archivedNew := b.insertReady(t, envelope.ChannelWebhook, 5, time.Now())
	_, err = aw.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	unarchivedOld := b.insertReady(t, envelope.ChannelWebhook, 5, old)
	pendingOld := b.insert(t, envelope.ChannelWebhook, mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/files/x"}, envelope.KindFile))
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE mio.inbox SET received_at = $2 WHERE id = $1", pendingOld, old)
		return err
	}))

	rw := &workers.RetentionWorker{Pool: b.env.Pool, Blob: store, BatchSize: 7, InboxRetention: 7 * 24 * time.Hour}
	deleted, err := rw.PruneInbox(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(30), deleted, "deleted in batches of 7")
	for _, id := range archivedOld {
		require.False(t, b.exists(t, id))
	}
	for _, id := range append(append(archivedNew, unarchivedOld...), pendingOld) {
		require.True(t, b.exists(t, id), "kept: %s", id)
	}

	// MaxPerRun bounds one run: archive the 5 left behind and 10 more.
	b.insertReady(t, envelope.ChannelWebhook, 10, old)
	_, err = aw.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	rw.MaxPerRun = 4
	deleted, err = rw.PruneInbox(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(4), deleted)
	rw.MaxPerRun = 0 // default
	deleted, err = rw.PruneInbox(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(11), deleted)
	require.True(t, b.exists(t, pendingOld), "never archived: kept")
}

// Blobs are deleted only once no message references them and the blob
// retention has passed; content shared with a live message stays.
func TestRetentionPrunesUnreferencedBlobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	ew := b.worker(t, store, testFetch())
	old := b.insert(t, envelope.ChannelWebhook,
		mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/files/only-old"}, envelope.KindFile),
		mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/files/shared"}, envelope.KindFile))
	live := b.insert(t, envelope.ChannelWebhook, mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/files/shared"}, envelope.KindFile))
	for _, id := range []uuid.UUID{old, live} {
		require.NoError(t, runEnrich(ctx, ew, b.tenant, id, 1, 8))
	}
	_, msg := b.message(t, old)
	onlyOld, shared := msg.Attachments[0].StorageKey, msg.Attachments[1].StorageKey
	require.NotEqual(t, onlyOld, shared)

	// An orphan: reserved and written by a run that crashed before
	// referencing it.
	orphanSHA := strings.Repeat("ab", 32)
	orphan := blob.AttachmentKey(orphanSHA)
	require.NoError(t, db.MediaBlobReserve(ctx, b.env.Pool, orphanSHA, orphan, 3))
	_, _, err = store.Put(ctx, orphan, strings.NewReader("abc"), blob.PutOptions{})
	require.NoError(t, err)

	// Age and archive the old message, then prune it.
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE mio.inbox SET received_at = now() - interval '10 days' WHERE id = $1", old)
		return err
	}))
	aw := &workers.ArchiveWorker{Pool: b.env.Pool, Blob: store, MaxAge: time.Nanosecond}
	_, err = aw.ArchiveTenant(ctx, b.tenant)
	require.NoError(t, err)
	now := time.Now()
	rw := &workers.RetentionWorker{Pool: b.env.Pool, Blob: store, Now: func() time.Time { return now }}
	deleted, err := rw.PruneInbox(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), deleted)

	// Within the blob retention nothing is deleted.
	nb, err := rw.PruneBlobs(ctx)
	require.NoError(t, err)
	require.Zero(t, nb)

	now = now.Add(25 * time.Hour)
	nb, err = rw.PruneBlobs(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, nb, "the old message's own blob and the orphan")
	for key, want := range map[string]bool{onlyOld: false, orphan: false, shared: true} {
		_, err := store.Stat(ctx, key)
		if want {
			require.NoError(t, err, key)
		} else {
			require.ErrorIs(t, err, blob.ErrNotFound, key)
		}
	}
	var refs int64
	require.NoError(t, b.env.Pool.QueryRow(ctx, "SELECT refs FROM mio.media_blobs WHERE storage_key = $1", shared).Scan(&refs))
	require.Equal(t, int64(1), refs)

	// The live message's attachment is still served from the store, and
	// new content equal to a pruned blob is stored again.
	again := b.insert(t, envelope.ChannelWebhook, mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/files/only-old"}, envelope.KindFile))
	require.NoError(t, runEnrich(ctx, ew, b.tenant, again, 1, 8))
	_, msg = b.message(t, again)
	require.Equal(t, onlyOld, msg.Attachments[0].StorageKey)
	_, err = store.Stat(ctx, onlyOld)
	require.NoError(t, err)
}
