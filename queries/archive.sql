-- name: ArchiveCursorGet :one
SELECT log_lo::text AS log_lo, coalesce(log_hi::text, ''::text)::text AS log_hi, ready_xid::text AS ready_xid, ready_seq
FROM mio.archive_cursors WHERE tenant_id = @tenant_id;

-- name: ArchiveWindowPin :execrows
-- Pins the window a batch was read from (@hi) before its objects are
-- written, creating the position on the first run, so a retried batch
-- reads the same rows and writes the same object names. 0 rows when
-- another archiver moved the position first.
INSERT INTO mio.archive_cursors AS c (tenant_id, log_lo, log_hi, ready_xid, ready_seq, updated_at)
VALUES (@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, '0', 0, now())
ON CONFLICT (tenant_id) DO UPDATE
SET log_hi = excluded.log_hi, updated_at = now()
WHERE c.log_hi IS NULL AND c.log_lo::text = excluded.log_lo::text;

-- name: ArchiveBatch :many
-- The next ready messages of the archive's window (@lo, @hi] after
-- (@after_xid, @after_seq), in window order (mio.log_ready: the
-- consumers' reader, so a message whose transaction commits late is never
-- skipped and an open transaction elsewhere holds nothing back).
SELECT i.id, i.channel_type, i.ready_xid::text AS ready_xid, i.ready_seq, i.envelope, i.raw,
       i.received_at, i.ready_at
FROM mio.log_ready(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, (@after_xid::text)::xid8,
    @after_seq::bigint, '{}', '{}', '{}', NULL, @max_rows::int) AS i
ORDER BY i.ready_xid, i.ready_seq;

-- name: ArchiveCursorAdvance :execrows
-- Moves the position from the old one to the new one; 0 rows when another
-- archiver moved it first (compare-and-set).
UPDATE mio.archive_cursors AS c
SET log_lo = (@new_lo::text)::pg_snapshot, log_hi = (sqlc.narg('new_hi')::text)::pg_snapshot,
    ready_xid = (@new_xid::text)::xid8, ready_seq = @new_seq::bigint, updated_at = now()
WHERE c.tenant_id = @tenant_id AND c.log_lo::text = @old_lo::text
  AND c.log_hi::text IS NOT DISTINCT FROM sqlc.narg('old_hi')::text
  AND c.ready_xid = (@old_xid::text)::xid8 AND c.ready_seq = @old_seq::bigint;

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
