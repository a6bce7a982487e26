-- Readers of the log (consumers, the archive, the NATS bridge) read
-- snapshot windows instead of waiting for the snapshot xmin: a reader's
-- position is a pair of snapshots (lo, hi) plus an (xid, seq) position
-- inside the window. Every row whose transaction is visible in lo has been
-- read; the window holds the rows whose transaction is visible in hi and
-- not in lo, read in (xid, seq) order. A transaction that stays open
-- (anywhere in the cluster) no longer holds anything back: it is in the
-- xip list of every snapshot while it runs, and its rows fall into the
-- first window whose hi sees it committed, exactly once
-- (docs/architecture.md, "Reading the log").
--
-- Also: consumer deliveries are ordered by the position at which they were
-- taken (pos) instead of the stream position, since a window can hand out a
-- row of a small xid after rows of larger xids; and the archive no longer
-- marks every archived inbox row (retention reads the archive position).

-- +goose Up
SET lock_timeout = '10s';

-- Transactions running at snapshot lo that have ended by snapshot hi: the
-- rows of those that committed are in the window (lo, hi] although their
-- xids are below pg_snapshot_xmax(lo).
-- +goose StatementBegin
CREATE FUNCTION mio.log_ended(lo pg_snapshot, hi pg_snapshot) RETURNS xid8[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT coalesce(array_agg(x), '{}') FROM pg_snapshot_xip(lo) AS x WHERE pg_visible_in_snapshot(x, hi) $$;
-- +goose StatementEnd

-- Whether a row at (xid, seq) has been read by a reader at (lo, hi, after).
-- +goose StatementBegin
CREATE FUNCTION mio.log_read(xid xid8, seq bigint, lo pg_snapshot, hi pg_snapshot, after_xid xid8, after_seq bigint)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT pg_visible_in_snapshot(xid, lo)
          OR (hi IS NOT NULL AND pg_visible_in_snapshot(xid, hi) AND (xid, seq) <= (after_xid, after_seq)) $$;
-- +goose StatementEnd

-- The next rows of a tenant's ready stage in the window (lo, hi] after
-- (after_xid, after_seq), matching a filter, in (ready_xid, ready_seq)
-- order. Index range scans: one per transaction that was running at lo
-- and has ended (equality on its xid: an index condition in generic plans
-- too, so the statement cache's plans stay good), and one over the xids
-- that started after lo (from pg_snapshot_xmax(lo)). Rows examined are the window's rows plus those of
-- transactions still running; a long-open transaction costs nothing. The
-- second scan's lower bound is ONE row comparison, max((xmax(lo), 0),
-- after) (sequences start at 1): given two lower bounds, the btree scan
-- starts at the row comparison and walks every older row of the tenant.
-- A set-returning SQL function that is STABLE and not STRICT: the planner
-- inlines it into the calling query (and row-level security applies).
-- +goose StatementBegin
CREATE FUNCTION mio.log_ready(
    p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint,
    p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamptz,
    p_max integer)
RETURNS SETOF mio.inbox
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT i.* FROM mio.inbox AS i
         WHERE i.tenant_id = p_tenant
           AND i.ready_xid = x.xid
           AND (i.ready_xid, i.ready_seq) > (p_after_xid, p_after_seq)
           AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
           AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
           AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
           AND (p_start_time IS NULL OR i.received_at >= p_start_time)
         ORDER BY i.ready_seq
         LIMIT p_max
     ) AS e
     ORDER BY e.ready_xid, e.ready_seq
     LIMIT p_max)
    UNION ALL
    (SELECT i.* FROM mio.inbox AS i
     WHERE i.tenant_id = p_tenant
       AND (i.ready_xid, i.ready_seq) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                                  CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND i.ready_xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(i.ready_xid, p_hi)
       AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
       AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
       AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
       AND (p_start_time IS NULL OR i.received_at >= p_start_time)
     ORDER BY i.ready_xid, i.ready_seq
     LIMIT p_max)
) AS w
ORDER BY w.ready_xid, w.ready_seq
LIMIT p_max
$$;
-- +goose StatementEnd

-- As mio.log_ready, for the received stage (insert xid, insert seq).
-- +goose StatementBegin
CREATE FUNCTION mio.log_received(
    p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint,
    p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamptz,
    p_max integer)
RETURNS SETOF mio.inbox
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT i.* FROM mio.inbox AS i
         WHERE i.tenant_id = p_tenant
           AND i.xid = x.xid
           AND (i.xid, i.seq) > (p_after_xid, p_after_seq)
           AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
           AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
           AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
           AND (p_start_time IS NULL OR i.received_at >= p_start_time)
         ORDER BY i.seq
         LIMIT p_max
     ) AS e
     ORDER BY e.xid, e.seq
     LIMIT p_max)
    UNION ALL
    (SELECT i.* FROM mio.inbox AS i
     WHERE i.tenant_id = p_tenant
       AND (i.xid, i.seq) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                                  CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND i.xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(i.xid, p_hi)
       AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
       AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
       AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
       AND (p_start_time IS NULL OR i.received_at >= p_start_time)
     ORDER BY i.xid, i.seq
     LIMIT p_max)
) AS w
ORDER BY w.xid, w.seq
LIMIT p_max
$$;
-- +goose StatementEnd

-- Consumers: (cursor_xid, cursor_seq) becomes the position inside the
-- window (log_lo, log_hi]; log_hi is NULL between windows. An old cursor
-- (x, s) had read every row below it: lo = 'x:x:' (every xid below x),
-- and when s > 0 a window holding exactly xid x, read up to s.
ALTER TABLE mio.consumers ADD COLUMN log_lo pg_snapshot, ADD COLUMN log_hi pg_snapshot;
UPDATE mio.consumers SET
    log_lo = format('%s:%s:', greatest(cursor_xid, '1'), greatest(cursor_xid, '1'))::pg_snapshot,
    log_hi = CASE WHEN cursor_seq > 0
                  THEN format('%s:%s:', cursor_xid::text::numeric + 1, cursor_xid::text::numeric + 1)::pg_snapshot END,
    cursor_xid = CASE WHEN cursor_seq > 0 THEN cursor_xid ELSE '0' END;
ALTER TABLE mio.consumers ALTER COLUMN log_lo SET NOT NULL;

-- The archive's position, the same way.
ALTER TABLE mio.archive_cursors ADD COLUMN log_lo pg_snapshot, ADD COLUMN log_hi pg_snapshot;
UPDATE mio.archive_cursors SET
    log_lo = format('%s:%s:', greatest(ready_xid, '1'), greatest(ready_xid, '1'))::pg_snapshot,
    log_hi = CASE WHEN ready_seq > 0
                  THEN format('%s:%s:', ready_xid::text::numeric + 1, ready_xid::text::numeric + 1)::pg_snapshot END,
    ready_xid = CASE WHEN ready_seq > 0 THEN ready_xid ELSE '0' END;
ALTER TABLE mio.archive_cursors ALTER COLUMN log_lo SET DEFAULT '1:1:', ALTER COLUMN log_lo SET NOT NULL;

-- Consumer deliveries are ordered by take position: batch * 4096 + index,
-- the batch drawn from the lease-range id sequence (a lease range's
-- members keep range id * 4096 + index), so positions grow in take order
-- across both orderings. Rows taken before this migration keep their
-- stream order below every new position.
ALTER TABLE mio.consumer_deliveries ADD COLUMN pos bigint;
UPDATE mio.consumer_deliveries AS d SET pos = o.rn - 9223372036854775807
FROM (SELECT tenant_id, consumer_name, message_id, row_number() OVER (ORDER BY xid, seq) AS rn
      FROM mio.consumer_deliveries) AS o
WHERE d.tenant_id = o.tenant_id AND d.consumer_name = o.consumer_name AND d.message_id = o.message_id;
ALTER TABLE mio.consumer_deliveries ALTER COLUMN pos SET NOT NULL;
DROP INDEX mio.consumer_deliveries_conversation;
CREATE INDEX consumer_deliveries_conversation ON mio.consumer_deliveries (tenant_id, consumer_name, conversation_key, pos) WHERE state <> 'dead';
ALTER TABLE mio.consumer_deliveries DROP COLUMN xid, DROP COLUMN seq;
GRANT USAGE, SELECT ON SEQUENCE mio.consumer_leases_id_seq TO mio_runtime;

-- Retention no longer looks for archived_at (the archive stopped marking
-- rows: an UPDATE per archived message, index entries included, was the
-- largest source of dead tuples in the inbox).
-- Retention finds old rows by a BRIN index on received_at instead (the
-- inbox is appended in time order: a few pages of summary, nearly free on
-- the ingest path).
DROP INDEX mio.inbox_archived;
CREATE INDEX inbox_received_at ON mio.inbox USING brin (received_at) WITH (autosummarize = on);

-- +goose Down
SET lock_timeout = '10s';
DROP INDEX mio.inbox_received_at;
CREATE INDEX inbox_archived ON mio.inbox (tenant_id, received_at) WHERE archived_at IS NOT NULL;
ALTER TABLE mio.consumer_deliveries ADD COLUMN xid xid8, ADD COLUMN seq bigint;
UPDATE mio.consumer_deliveries AS d SET xid = coalesce(i.ready_xid, i.xid), seq = coalesce(i.ready_seq, i.seq)
FROM mio.inbox AS i WHERE i.tenant_id = d.tenant_id AND i.id = d.message_id;
UPDATE mio.consumer_deliveries SET xid = '0', seq = 0 WHERE xid IS NULL;
ALTER TABLE mio.consumer_deliveries ALTER COLUMN xid SET NOT NULL, ALTER COLUMN seq SET NOT NULL;
DROP INDEX mio.consumer_deliveries_conversation;
CREATE INDEX consumer_deliveries_conversation ON mio.consumer_deliveries (tenant_id, consumer_name, conversation_key, xid, seq) WHERE state <> 'dead';
ALTER TABLE mio.consumer_deliveries DROP COLUMN pos;
-- Back to the xmin rule: a reader restarts at its lo's xmin (rows of
-- windows read past it may come again: at-least-once).
UPDATE mio.consumers SET cursor_xid = pg_snapshot_xmin(log_lo), cursor_seq = 0;
ALTER TABLE mio.consumers DROP COLUMN log_lo, DROP COLUMN log_hi;
UPDATE mio.archive_cursors SET ready_xid = pg_snapshot_xmin(log_lo), ready_seq = 0;
ALTER TABLE mio.archive_cursors DROP COLUMN log_lo, DROP COLUMN log_hi;
DROP FUNCTION IF EXISTS mio.log_received;
DROP FUNCTION IF EXISTS mio.log_ready;
DROP FUNCTION IF EXISTS mio.log_read;
DROP FUNCTION IF EXISTS mio.log_ended;
