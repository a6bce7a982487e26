-- name: InboxArchivedPrune :one
-- Deletes at most @max_rows of the tenant's inbox messages received before
-- @before AND already read by the archive (an unarchived message is never
-- deleted; the archive position says which, migration 00007), found by the
-- BRIN index on received_at (one per partition), with their attachment
-- rows, and releases the blob references those attachments held. Returns
-- how many messages it deleted. Rows are named by key, not ctid: a ctid
-- is unique within one partition only (migration 00015).
WITH doomed AS (
    DELETE FROM mio.inbox
    WHERE tenant_id = @tenant_id::uuid AND id = ANY (ARRAY(
        SELECT i.id FROM mio.inbox AS i
        JOIN mio.archive_cursors AS c ON c.tenant_id = @tenant_id::uuid
        WHERE i.tenant_id = @tenant_id::uuid AND i.received_at < @before::timestamptz AND i.ready_xid IS NOT NULL
          AND mio.log_read(i.ready_xid, i.ready_seq, c.log_lo, c.log_hi, c.ready_xid, c.ready_seq)
        LIMIT @max_rows::int
    ))
    RETURNING id
), gone AS (
    DELETE FROM mio.attachments AS a
    USING doomed
    WHERE a.tenant_id = @tenant_id::uuid AND a.message_id = doomed.id
    RETURNING a.content_sha256
), released AS (
    SELECT g.content_sha256, count(*) AS n FROM gone AS g
    WHERE g.content_sha256 IS NOT NULL
    GROUP BY g.content_sha256
), unref AS (
    UPDATE mio.media_blobs AS b
    SET refs = greatest(b.refs - r.n, 0),
        unreferenced_since = CASE WHEN b.refs - r.n <= 0 THEN now() ELSE b.unreferenced_since END
    FROM released AS r
    WHERE b.content_sha256 = r.content_sha256
    RETURNING 1
)
SELECT (SELECT count(*) FROM doomed)::bigint AS deleted, (SELECT count(*) FROM unref)::bigint AS blobs_released;

-- name: InboxPartitionsEnsure :one
-- Creates the inbox's missing day partitions from @from_day to @to_day
-- (UTC days, both included); returns how many it created (migration 00015).
SELECT mio.inbox_partitions_ensure(@from_day::date, @to_day::date)::int AS created;

-- name: InboxPartitionRetire :many
-- Detaches and drops the oldest inbox day partition that ended by @before,
-- once all its messages are ready and archived (migration 00015); no row
-- when none is due.
SELECT r.partition_name::text AS partition_name, r.messages::bigint AS messages, r.blobs_released::bigint AS blobs_released
FROM mio.inbox_partition_retire(@before::timestamptz) AS r;

