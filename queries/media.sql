-- name: AttachmentInsert :execrows
-- Records one settled attachment; a row already recorded (a retried job)
-- is left as it is and 0 is returned.
INSERT INTO mio.attachments (
    tenant_id, id, message_id, account_id, channel_type, status, kind, name, mime_type, size,
    storage_key, content_sha256, error, attempts
) VALUES (
    @tenant_id, @id, @message_id, @account_id, @channel_type, @status, @kind, @name, @mime_type, @size,
    sqlc.narg('storage_key'), sqlc.narg('content_sha256'), @error, @attempts
)
ON CONFLICT (tenant_id, id) DO NOTHING;

-- name: AttachmentListByMessage :many
SELECT * FROM mio.attachments
WHERE tenant_id = @tenant_id AND message_id = @message_id;

-- name: AttachmentGet :one
SELECT * FROM mio.attachments
WHERE tenant_id = @tenant_id AND id = @id;

-- name: MediaInboxSettle :execrows
-- Writes the settled envelope and makes the message ready in one
-- statement: ready_xid/ready_seq put it on the ready stream in commit
-- order (consumers and the archive read below pg_snapshot_xmin).
UPDATE mio.inbox
SET envelope  = @envelope::jsonb,
    state     = 'ready',
    ready_xid = pg_current_xact_id(),
    ready_seq = nextval('mio.inbox_ready_seq'),
    ready_at  = now()
WHERE tenant_id = @tenant_id AND id = @id AND state = 'received';

-- name: MediaBlobLock :exec
-- Serializes writers of one blob's registry row for the transaction
-- (reserve/reference in enrich, deletion in the blob prune). An advisory
-- lock takes no transaction id, so holding it across a store call does not
-- hold back consumers' visibility horizon.
SELECT pg_advisory_xact_lock(hashtextextended('mio.media_blobs:' || @content_sha256::text, 0));

-- name: MediaBlobReserve :exec
-- Registers a blob before its bytes are written (or refreshes an
-- unreferenced one), so an object left by a crash before it is referenced
-- is still found and collected by the blob prune.
INSERT INTO mio.media_blobs (content_sha256, storage_key, size, refs, unreferenced_since)
VALUES (@content_sha256, @storage_key, @size, 0, now())
ON CONFLICT (content_sha256) DO UPDATE
SET unreferenced_since = CASE WHEN mio.media_blobs.refs = 0 THEN now() ELSE NULL END;

-- name: MediaBlobRef :exec
-- Counts one more stored attachment naming the blob.
INSERT INTO mio.media_blobs (content_sha256, storage_key, size, refs, unreferenced_since)
VALUES (@content_sha256, @storage_key, @size, 1, NULL)
ON CONFLICT (content_sha256) DO UPDATE
SET refs = mio.media_blobs.refs + 1, unreferenced_since = NULL;

-- name: MediaBlobPruneCandidates :many
-- Blobs unreferenced since before @before, oldest first.
SELECT content_sha256, storage_key FROM mio.media_blobs
WHERE refs = 0 AND unreferenced_since < @before::timestamptz
ORDER BY unreferenced_since
LIMIT @max_rows::int;

-- name: MediaBlobGet :one
SELECT * FROM mio.media_blobs WHERE content_sha256 = @content_sha256;

-- name: MediaBlobDelete :execrows
-- Deletes a blob's row if it is still unreferenced and old (the caller
-- holds the blob's advisory lock and has deleted the object).
DELETE FROM mio.media_blobs
WHERE content_sha256 = @content_sha256 AND refs = 0 AND unreferenced_since < @before::timestamptz;
