-- name: ArchiveCursorGet :one
SELECT ready_xid::text AS ready_xid, ready_seq FROM mio.archive_cursors WHERE tenant_id = @tenant_id;

-- name: ArchiveBatch :many
-- The next ready messages after the cursor, in ready-stream order, only
-- below the snapshot horizon: a transaction that made a message ready
-- and has not committed yet holds the horizon back, so no message is ever
-- skipped, whatever the commit order (the consumers' technique).
SELECT i.id, i.channel_type, i.ready_xid::text AS ready_xid, i.ready_seq, i.envelope, i.raw,
       i.received_at, i.ready_at
FROM mio.inbox AS i
WHERE i.tenant_id = @tenant_id
  AND i.ready_xid IS NOT NULL
  AND i.ready_xid < pg_snapshot_xmin(pg_current_snapshot())
  AND (i.ready_xid, i.ready_seq) > ((@after_xid::text)::xid8, @after_seq::bigint)
ORDER BY i.ready_xid, i.ready_seq
LIMIT @max_rows::int;

-- name: ArchiveCursorAdvance :execrows
-- Moves the cursor from (@old_xid, @old_seq) to (@new_xid, @new_seq);
-- 0 rows when another archiver moved it first (compare-and-set).
INSERT INTO mio.archive_cursors AS c (tenant_id, ready_xid, ready_seq, updated_at)
VALUES (@tenant_id, (@new_xid::text)::xid8, @new_seq::bigint, now())
ON CONFLICT (tenant_id) DO UPDATE
SET ready_xid = excluded.ready_xid, ready_seq = excluded.ready_seq, updated_at = now()
WHERE c.ready_xid = (@old_xid::text)::xid8 AND c.ready_seq = @old_seq::bigint;

-- name: ArchiveMarkArchived :execrows
UPDATE mio.inbox SET archived_at = now()
WHERE tenant_id = @tenant_id AND id = ANY (@ids::uuid[]) AND archived_at IS NULL;

-- name: ArchivePartUpsert :exec
INSERT INTO mio.archive_parts (
    tenant_id, object_key, channel_type, day, rows, bytes, first_xid, first_seq, last_xid, last_seq
)
SELECT @tenant_id::uuid, p.object_key, p.channel_type, p.day, p.rows, p.bytes,
       (@first_xid::text)::xid8, @first_seq::bigint, (@last_xid::text)::xid8, @last_seq::bigint
FROM (
    SELECT unnest(@object_keys::text[]) AS object_key,
           unnest(@channel_types::text[]) AS channel_type,
           unnest(@days::date[]) AS day,
           unnest(@row_counts::int[]) AS rows,
           unnest(@byte_counts::bigint[]) AS bytes
) AS p
ON CONFLICT (tenant_id, object_key) DO UPDATE
SET rows = excluded.rows, bytes = excluded.bytes, first_xid = excluded.first_xid,
    first_seq = excluded.first_seq, last_xid = excluded.last_xid, last_seq = excluded.last_seq,
    written_at = now();

-- name: ArchiveTryLock :one
-- A session-level advisory lock per tenant: one archiver per tenant at a
-- time, held across the object writes without holding a transaction.
SELECT pg_try_advisory_lock(hashtextextended('mio.archive:' || @tenant_id::text, 0)) AS locked;

-- name: ArchiveUnlock :exec
SELECT pg_advisory_unlock(hashtextextended('mio.archive:' || @tenant_id::text, 0));
