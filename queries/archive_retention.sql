-- name: InboxArchivedPrune :one
-- Deletes at most @max_rows of the tenant's inbox messages received before
-- @before AND already read by the archive (an unarchived message is never
-- deleted; the archive position says which), found by the
-- BRIN index on received_at (one per partition), with their attachment
-- rows, and releases the blob references those attachments held. Returns
-- how many messages it deleted. Rows are named by key, not ctid: a ctid
-- is unique within one partition only.
WITH doomed AS (
    DELETE FROM mio.inbox
    WHERE tenant_id = @tenant_id::uuid AND id = ANY (ARRAY(
        SELECT i.id FROM mio.inbox AS i
        JOIN mio.archive_cursors AS c ON c.tenant_id = @tenant_id::uuid
        WHERE i.tenant_id = @tenant_id::uuid AND i.received_at < @before::timestamptz AND i.ready_xid IS NOT NULL
          AND mio.log_read(i.ready_xid, i.ready_seq, c.log_lo, c.log_hi, c.ready_xid, c.ready_seq)
        LIMIT @max_rows::int
    ))
    RETURNING id, xid, seq, ready_xid, ready_seq, channel_type, account_id, conversation_id, received_at
), unread AS (
    -- Deleted rows a consumer had not read yet, which it would have taken:
    -- counted into its base. The caller holds the
    -- consumers' pull locks (ConsumersLockTenant), so positions read here
    -- are current.
    SELECT s.name, count(*) AS n
    FROM mio.consumer_state AS s
    JOIN doomed AS d ON CASE WHEN s.stage = 'ready' THEN NOT mio.log_read(d.ready_xid, d.ready_seq, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq)
                             ELSE NOT mio.log_read(d.xid, d.seq, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq) END
    WHERE s.tenant_id = @tenant_id::uuid
      AND (cardinality(coalesce(s.filter_channel_types, '{}')) = 0 OR d.channel_type = ANY (s.filter_channel_types))
      AND (cardinality(coalesce(s.filter_account_ids, '{}')) = 0 OR d.account_id = ANY (s.filter_account_ids))
      AND (cardinality(coalesce(s.filter_conversation_ids, '{}')) = 0 OR d.conversation_id = ANY (s.filter_conversation_ids))
      AND (s.start_time IS NULL OR d.received_at >= s.start_time)
    GROUP BY s.name
), rebased AS (
    UPDATE mio.consumers AS c SET backlog_base = c.backlog_base + u.n
    FROM unread AS u
    WHERE c.tenant_id = @tenant_id::uuid AND c.name = u.name
    RETURNING 1
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
SELECT (SELECT count(*) FROM doomed)::bigint AS deleted, (SELECT count(*) FROM unref)::bigint AS blobs_released,
       (SELECT count(*) FROM rebased)::bigint AS consumers_rebased;

-- name: InboxArchivedPruneDue :one
-- Whether InboxArchivedPrune has anything to delete (the same rows, the
-- first one found), so that a run with nothing to do takes no lock.
SELECT EXISTS (
    SELECT 1 FROM mio.inbox AS i
    JOIN mio.archive_cursors AS c ON c.tenant_id = @tenant_id::uuid
    WHERE i.tenant_id = @tenant_id::uuid AND i.received_at < @before::timestamptz AND i.ready_xid IS NOT NULL
      AND mio.log_read(i.ready_xid, i.ready_seq, c.log_lo, c.log_hi, c.ready_xid, c.ready_seq)
) AS due;

-- name: ConsumersLockTenant :exec
-- Takes the pull locks of every consumer of the tenant (name order), so
-- that a later statement reads their current positions and no pull moves
-- them until the commit.
SELECT count(*) FROM (SELECT 1 FROM mio.consumers WHERE tenant_id = @tenant_id ORDER BY name FOR NO KEY UPDATE) AS l;

-- name: InboxPartitionsEnsure :one
-- Creates the inbox's missing day partitions from @from_day to @to_day
-- (UTC days, both included); returns how many it created.
SELECT mio.inbox_partitions_ensure(@from_day::date, @to_day::date)::int AS created;

-- name: InboxPartitionRetire :many
-- Detaches and drops the oldest inbox day partition that ended by @before,
-- once all its messages are ready and archived; no row
-- when none is due.
SELECT r.partition_name::text AS partition_name, r.messages::bigint AS messages, r.blobs_released::bigint AS blobs_released
FROM mio.inbox_partition_retire(@before::timestamptz) AS r;

