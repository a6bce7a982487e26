-- Lease ranges of unordered consumers (migration 00006): one row per batch
-- taken from the stream; per-message rows only off the happy path.

-- name: LeaseTakeReady :many
-- Ordering none, ready stage, in one statement: read the next rows of the
-- consumer's window (@lo, @hi] after its position (mio.log_ready; @hi was
-- taken by an earlier statement of this transaction), lease them all as
-- one range, and move the consumer's position (stamping its last delivery
-- when rows were read or @delivered). The rows read are returned with the
-- range id; member i is the i-th row in window order. The caller holds the
-- consumer's row lock and passes the position it read under it.
WITH s AS (
    SELECT i.id, i.ready_xid AS xid, i.ready_seq AS seq, i.seq AS message_seq, i.envelope, i.raw
    FROM mio.log_ready(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, @cursor_xid::xid8, @cursor_seq::bigint,
        @channel_types::text[], @account_ids::uuid[], @conversation_ids::text[], sqlc.narg('start_time')::timestamptz,
        @max_rows::int) AS i
),
l AS (
    INSERT INTO mio.consumer_leases (tenant_id, consumer_name, message_ids, expires_at)
    SELECT @tenant_id::uuid, @consumer_name::text, array_agg(s.id ORDER BY s.xid, s.seq), now() + @ack_wait::interval
    FROM s
    HAVING count(*) > 0
    RETURNING id
),
k AS (
    SELECT count(*) AS n,
           (array_agg(s.xid ORDER BY s.xid DESC, s.seq DESC))[1] AS last_xid,
           (array_agg(s.seq ORDER BY s.xid DESC, s.seq DESC))[1] AS last_seq
    FROM s
),
-- The new position: when fewer rows than asked came back, the window
-- (@lo, @hi] has been read to its end and @hi becomes lo (no window open);
-- otherwise the window stays open at @hi, read up to the last row.
nc AS (
    SELECT k.n,
           CASE WHEN k.n < @max_rows THEN @hi::text ELSE @lo::text END AS lo,
           CASE WHEN k.n < @max_rows THEN NULL ELSE @hi::text END AS hi,
           CASE WHEN k.n < @max_rows THEN '0'::xid8 ELSE k.last_xid END AS xid,
           CASE WHEN k.n < @max_rows THEN 0::bigint ELSE k.last_seq END AS seq
    FROM k
),
adv AS (
    UPDATE mio.consumers AS c
    SET log_lo = nc.lo::pg_snapshot, log_hi = nc.hi::pg_snapshot, cursor_xid = nc.xid, cursor_seq = nc.seq,
        last_delivered_at = CASE WHEN nc.n > 0 OR @delivered::bool THEN now() ELSE c.last_delivered_at END
    FROM nc
    WHERE c.tenant_id = @tenant_id AND c.name = @consumer_name
      AND (c.log_lo::text <> nc.lo OR c.log_hi::text IS DISTINCT FROM nc.hi
           OR (c.cursor_xid, c.cursor_seq) <> (nc.xid, nc.seq) OR nc.n > 0 OR @delivered::bool)
)
SELECT s.id, s.xid, s.seq, s.message_seq, s.envelope, s.raw, l.id AS lease_id
FROM s CROSS JOIN l
ORDER BY s.xid, s.seq;

-- name: LeaseTakeReceived :many
-- As LeaseTakeReady, for the received stage (ordered by insert position).
WITH s AS (
    SELECT i.id, i.xid AS xid, i.seq AS seq, i.seq AS message_seq, i.envelope, i.raw
    FROM mio.log_received(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, @cursor_xid::xid8, @cursor_seq::bigint,
        @channel_types::text[], @account_ids::uuid[], @conversation_ids::text[], sqlc.narg('start_time')::timestamptz,
        @max_rows::int) AS i
),
l AS (
    INSERT INTO mio.consumer_leases (tenant_id, consumer_name, message_ids, expires_at)
    SELECT @tenant_id::uuid, @consumer_name::text, array_agg(s.id ORDER BY s.xid, s.seq), now() + @ack_wait::interval
    FROM s
    HAVING count(*) > 0
    RETURNING id
),
k AS (
    SELECT count(*) AS n,
           (array_agg(s.xid ORDER BY s.xid DESC, s.seq DESC))[1] AS last_xid,
           (array_agg(s.seq ORDER BY s.xid DESC, s.seq DESC))[1] AS last_seq
    FROM s
),
-- The new position: when fewer rows than asked came back, the window
-- (@lo, @hi] has been read to its end and @hi becomes lo (no window open);
-- otherwise the window stays open at @hi, read up to the last row.
nc AS (
    SELECT k.n,
           CASE WHEN k.n < @max_rows THEN @hi::text ELSE @lo::text END AS lo,
           CASE WHEN k.n < @max_rows THEN NULL ELSE @hi::text END AS hi,
           CASE WHEN k.n < @max_rows THEN '0'::xid8 ELSE k.last_xid END AS xid,
           CASE WHEN k.n < @max_rows THEN 0::bigint ELSE k.last_seq END AS seq
    FROM k
),
adv AS (
    UPDATE mio.consumers AS c
    SET log_lo = nc.lo::pg_snapshot, log_hi = nc.hi::pg_snapshot, cursor_xid = nc.xid, cursor_seq = nc.seq,
        last_delivered_at = CASE WHEN nc.n > 0 OR @delivered::bool THEN now() ELSE c.last_delivered_at END
    FROM nc
    WHERE c.tenant_id = @tenant_id AND c.name = @consumer_name
      AND (c.log_lo::text <> nc.lo OR c.log_hi::text IS DISTINCT FROM nc.hi
           OR (c.cursor_xid, c.cursor_seq) <> (nc.xid, nc.seq) OR nc.n > 0 OR @delivered::bool)
)
SELECT s.id, s.xid, s.seq, s.message_seq, s.envelope, s.raw, l.id AS lease_id
FROM s CROSS JOIN l
ORDER BY s.xid, s.seq;

-- name: LeaseMaterialize :execrows
-- Moves the outstanding members of a consumer's expired lease ranges (of
-- all its ranges when @all) into per-message leased deliveries that keep
-- their delivery ids and expiry, and deletes those ranges. Expired ones
-- are then redelivered or dead-lettered like any expired lease. A member
-- whose message is gone (retention) has nothing left to deliver.
WITH x AS (
    DELETE FROM mio.consumer_leases AS l
    WHERE l.tenant_id = @tenant_id AND l.consumer_name = @consumer_name
      AND (@every::bool OR l.expires_at <= now())
    RETURNING l.id, l.message_ids, l.settled, l.expires_at
),
m AS (
    SELECT x.id AS lease_id, g.idx, x.message_ids[g.idx + 1] AS message_id, x.expires_at
    FROM x CROSS JOIN LATERAL generate_series(0, cardinality(x.message_ids) - 1) AS g (idx)
    WHERE NOT (g.idx = ANY (x.settled))
)
INSERT INTO mio.consumer_deliveries (
    tenant_id, consumer_name, message_id, pos, message_seq, conversation_key, state,
    delivery_id, delivery_count, lease_expires_at
)
SELECT @tenant_id::uuid, @consumer_name::text, i.id,
       m.lease_id * 4096 + m.idx, i.seq, i.account_id::text || ':' || i.conversation_id, 'leased',
       mio.lease_delivery_id(m.lease_id, m.idx), 1, m.expires_at
FROM m JOIN mio.inbox AS i ON i.tenant_id = @tenant_id AND i.id = m.message_id
ON CONFLICT DO NOTHING;

-- name: LeaseMaterializeMembers :many
-- Moves the given outstanding members (@lease_ids[k], @idxs[k]) out of
-- their ranges into per-message leased deliveries with the same delivery
-- ids and expiry, so that a nak, term or extend applies to them alone.
-- Returns the members moved.
WITH req AS (
    SELECT unnest(@lease_ids::bigint[]) AS lease_id, unnest(@idxs::int[]) AS idx
),
l AS (
    SELECT r.id, r.message_ids, r.settled, r.expires_at FROM mio.consumer_leases AS r
    WHERE r.tenant_id = @tenant_id AND r.consumer_name = @consumer_name AND r.id = ANY (@lease_ids::bigint[])
    FOR UPDATE
),
m AS (
    SELECT DISTINCT l.id AS lease_id, req.idx, l.message_ids[req.idx + 1] AS message_id, l.expires_at
    FROM req JOIN l ON l.id = req.lease_id
    WHERE req.idx >= 0 AND req.idx < cardinality(l.message_ids) AND NOT (req.idx = ANY (l.settled))
),
u AS (
    UPDATE mio.consumer_leases AS u
    SET settled = u.settled || ARRAY(SELECT m.idx FROM m WHERE m.lease_id = u.id)
    WHERE u.tenant_id = @tenant_id AND u.consumer_name = @consumer_name AND u.id IN (SELECT m.lease_id FROM m)
),
ins AS (
    INSERT INTO mio.consumer_deliveries (
        tenant_id, consumer_name, message_id, pos, message_seq, conversation_key, state,
        delivery_id, delivery_count, lease_expires_at
    )
    SELECT @tenant_id::uuid, @consumer_name::text, i.id,
           m.lease_id * 4096 + m.idx, i.seq, i.account_id::text || ':' || i.conversation_id, 'leased',
           mio.lease_delivery_id(m.lease_id, m.idx), 1, m.expires_at
    FROM m JOIN mio.inbox AS i ON i.tenant_id = @tenant_id AND i.id = m.message_id
    ON CONFLICT DO NOTHING
)
SELECT m.lease_id, m.idx::int AS idx FROM m;

-- name: LeaseAck :many
-- Acknowledges outstanding members (@lease_ids[k], @idxs[k]) of lease
-- ranges: a range whose members are all settled is deleted (the usual
-- case: one delete per acknowledged batch), others record the indexes.
-- Returns the members that were outstanding.
WITH req AS (
    SELECT unnest(@lease_ids::bigint[]) AS lease_id, unnest(@idxs::int[]) AS idx
),
l AS (
    SELECT r.id, r.message_ids, r.settled FROM mio.consumer_leases AS r
    WHERE r.tenant_id = @tenant_id AND r.consumer_name = @consumer_name AND r.id = ANY (@lease_ids::bigint[])
    FOR UPDATE
),
hit AS (
    SELECT DISTINCT l.id AS lease_id, req.idx, cardinality(l.message_ids) - cardinality(l.settled) AS outstanding
    FROM req JOIN l ON l.id = req.lease_id
    WHERE req.idx >= 0 AND req.idx < cardinality(l.message_ids) AND NOT (req.idx = ANY (l.settled))
),
agg AS (
    SELECT hit.lease_id, array_agg(hit.idx) AS idxs, max(hit.outstanding) - count(*) AS remaining
    FROM hit GROUP BY hit.lease_id
),
del AS (
    DELETE FROM mio.consumer_leases AS d USING agg
    WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name AND d.id = agg.lease_id AND agg.remaining = 0
),
upd AS (
    UPDATE mio.consumer_leases AS u SET settled = u.settled || agg.idxs
    FROM agg
    WHERE u.tenant_id = @tenant_id AND u.consumer_name = @consumer_name AND u.id = agg.lease_id AND agg.remaining > 0
)
SELECT hit.lease_id, hit.idx::int AS idx FROM hit;
