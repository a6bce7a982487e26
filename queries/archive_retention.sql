-- name: InboxArchivedPrune :one
-- Deletes at most @max_rows of the tenant's inbox messages received before
-- @before AND already read by the archive (an unarchived message is never
-- deleted; the archive position says which, migration 00007), found by the
-- BRIN index on received_at,
-- with their attachment rows, and releases the blob references those
-- attachments held. Returns how many messages it deleted.
WITH doomed AS (
    DELETE FROM mio.inbox
    WHERE ctid = ANY (ARRAY(
        SELECT i.ctid FROM mio.inbox AS i
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
