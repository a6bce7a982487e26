-- Lease ranges of unordered consumers: one row per batch
-- taken from the stream; per-message rows only off the happy path.

-- name: LeaseTakeReceived :many
-- As mio.consumer_take_ready, for the received stage (ordered by insert position).
WITH s AS (
    SELECT i.id, i.xid AS xid, i.seq AS seq, i.seq AS message_seq, i.envelope, i.raw
    FROM mio.log_received(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, @cursor_xid::xid8, @cursor_seq::bigint,
        @channel_types::text[], @account_ids::uuid[], @conversation_ids::text[], sqlc.narg('start_time')::timestamptz,
        @max_rows::int) AS i
),
g AS (SELECT gen FROM mio.consumer_log_gen),
l AS (
    INSERT INTO mio.consumer_leases (tenant_id, consumer_name, gen, id, message_ids, expires_at)
    SELECT @tenant_id::uuid, @consumer_name::text, (SELECT gen FROM g), nextval('mio.consumer_take_ids'),
           array_agg(s.id ORDER BY s.xid, s.seq), now() + @ack_wait::interval
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
    INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at, taken)
    SELECT @tenant_id::uuid, @consumer_name::text, (SELECT gen FROM g), nc.lo::pg_snapshot, nc.hi::pg_snapshot, nc.xid, nc.seq,
           @swept::bigint, CASE WHEN nc.n > 0 OR @delivered::bool THEN now() ELSE sqlc.narg('last_delivered_at')::timestamptz END,
           sqlc.arg('taken')::bigint + nc.n
    FROM nc
    WHERE nc.n > 0 OR @delivered::bool OR @persist::bool
)
SELECT s.id, s.xid, s.seq, s.message_seq, s.envelope, s.raw, l.id::bigint AS lease_id
FROM s CROSS JOIN l
ORDER BY s.xid, s.seq;

-- name: LeaseLock :one
-- Serializes everything that settles members of the given lease ranges
-- (acks, moves out) with a transaction-scoped advisory lock per range, in
-- range order. The statements after it (each with a snapshot of its own)
-- see every settlement committed before the lock was granted. Pure lock
-- memory: nothing is written.
SELECT count(pg_advisory_xact_lock(1835626348, (s.id % 2147483647)::int))::int AS locked
FROM (SELECT DISTINCT u.id FROM unnest(@lease_ids::bigint[]) AS u (id) ORDER BY u.id OFFSET 0) AS s;

-- name: LeaseMovable :many
-- The lease ranges of a consumer a move-out applies to, for LeaseLock:
-- those above its sweep that expired, or all of them (@every), or those of
-- generation @gen (the rotation).
SELECT r.id FROM mio.consumer_leases AS r
WHERE r.tenant_id = @tenant_id AND r.consumer_name = @consumer_name AND r.id > @swept::bigint
  AND (@every::bool OR r.expires_at <= now() OR r.gen = sqlc.narg('gen')::smallint)
ORDER BY r.id;

-- name: LeaseMaterialize :execrows
-- Moves the outstanding members of a consumer's lease ranges above its
-- sweep that expired (all of them when @every, those of generation @gen
-- for the rotation) into per-message leased deliveries that keep their
-- delivery ids and expiry, and records them settled in their ranges.
-- Expired ones are then redelivered or dead-lettered like any expired
-- lease. A member whose message is gone (retention) has nothing left to
-- deliver. The caller holds LeaseLock on the ranges.
WITH x AS (
    SELECT r.id, r.message_ids, r.expires_at FROM mio.consumer_leases AS r
    WHERE r.tenant_id = @tenant_id AND r.consumer_name = @consumer_name AND r.id > @swept::bigint
      AND (@every::bool OR r.expires_at <= now() OR r.gen = sqlc.narg('gen')::smallint)
),
m AS (
    SELECT x.id AS lease_id, g.idx, x.message_ids[g.idx + 1] AS message_id, x.expires_at
    FROM x CROSS JOIN LATERAL generate_series(0, cardinality(x.message_ids) - 1) AS g (idx)
    WHERE NOT EXISTS (
        SELECT 1 FROM mio.consumer_settles AS s
        WHERE s.tenant_id = @tenant_id AND s.consumer_name = @consumer_name AND s.lease_id = x.id AND g.idx = ANY (s.idxs))
),
st AS (
    INSERT INTO mio.consumer_settles (tenant_id, consumer_name, gen, lease_id, idxs)
    SELECT @tenant_id::uuid, @consumer_name::text, (SELECT gen FROM mio.consumer_log_gen), m.lease_id, array_agg(m.idx)
    FROM m GROUP BY m.lease_id
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
-- Returns the members moved. The caller holds LeaseLock on the ranges.
WITH req AS (
    SELECT unnest(@lease_ids::bigint[]) AS lease_id, unnest(@idxs::int[]) AS idx
),
-- Each range is looked up by one equality per distinct id (LATERAL,
-- OFFSET 0: not flattened), never by `id = ANY (...)`, which a generic plan
-- over the ring's freshly truncated partitions costs as a filter over the
-- consumer's whole generation (the ack's same lookup).
l AS (
    SELECT r.id, r.message_ids, r.expires_at
    FROM (SELECT DISTINCT u.id FROM unnest(@lease_ids::bigint[]) AS u (id)) AS ids
    CROSS JOIN LATERAL (
        SELECT x.id, x.message_ids, x.expires_at FROM mio.consumer_leases AS x
        WHERE x.tenant_id = @tenant_id AND x.consumer_name = @consumer_name AND x.id = ids.id
        OFFSET 0
    ) AS r
),
m AS (
    SELECT DISTINCT l.id AS lease_id, req.idx, l.message_ids[req.idx + 1] AS message_id, l.expires_at
    FROM req JOIN l ON l.id = req.lease_id
    WHERE req.idx >= 0 AND req.idx < cardinality(l.message_ids)
      AND NOT EXISTS (
          SELECT 1 FROM mio.consumer_settles AS s
          WHERE s.tenant_id = @tenant_id AND s.consumer_name = @consumer_name AND s.lease_id = l.id AND req.idx = ANY (s.idxs))
),
st AS (
    INSERT INTO mio.consumer_settles (tenant_id, consumer_name, gen, lease_id, idxs)
    SELECT @tenant_id::uuid, @consumer_name::text, (SELECT gen FROM mio.consumer_log_gen), m.lease_id, array_agg(m.idx)
    FROM m GROUP BY m.lease_id
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

-- name: ConsumerLogGen :one
-- The ring's state: the generation written, whether the
-- one after it is empty, when it last advanced.
SELECT gen, next_clean, rotated_at FROM mio.consumer_log_gen;

-- name: ConsumerLogGenLock :one
SELECT gen, next_clean, rotated_at FROM mio.consumer_log_gen FOR UPDATE;

-- name: ConsumerLogGenCleaned :exec
UPDATE mio.consumer_log_gen SET next_clean = true WHERE gen = @gen;

-- name: ConsumerLogGenAdvance :execrows
-- Advances the ring when the next generation is empty and the current one
-- is at least @period old.
UPDATE mio.consumer_log_gen SET gen = (gen + 1) % 3, next_clean = false, rotated_at = now()
WHERE next_clean AND rotated_at <= now() - @period::interval;

-- name: ConsumersInGen :many
-- Consumers of a tenant with rows in generation @gen.
SELECT DISTINCT t.consumer_name::text AS consumer_name FROM (
    SELECT r.consumer_name FROM mio.consumer_leases AS r WHERE r.tenant_id = @tenant_id AND r.gen = @gen::smallint
    UNION ALL
    SELECT p.consumer_name FROM mio.consumer_positions AS p WHERE p.tenant_id = @tenant_id AND p.gen = @gen::smallint
) AS t;

-- name: ConsumerPositionKeep :exec
-- Copies a consumer's newest position into its own row when that position
-- is in generation @gen, about to be retired.
UPDATE mio.consumers AS c
SET log_lo = p.log_lo, log_hi = p.log_hi, cursor_xid = p.cursor_xid, cursor_seq = p.cursor_seq, swept = p.swept,
    last_delivered_at = p.last_delivered_at, taken = p.taken
FROM (
    SELECT q.gen, q.log_lo, q.log_hi, q.cursor_xid, q.cursor_seq, q.swept, q.last_delivered_at, q.taken
    FROM mio.consumer_positions AS q
    WHERE q.tenant_id = @tenant_id AND q.consumer_name = @consumer_name
    ORDER BY q.n DESC
    LIMIT 1
) AS p
WHERE c.tenant_id = @tenant_id AND c.name = @consumer_name AND p.gen = @gen::smallint;
