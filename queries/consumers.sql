-- name: ConsumerUpsert :one
-- Creates a consumer (cursor from its deliver policy) or updates its
-- configuration; an update never moves the cursor.
INSERT INTO mio.consumers (
    tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids,
    deliver_policy, start_time, ack_wait_ms, max_deliver, max_ack_pending, ordering, stage,
    cursor_xid, cursor_seq, log_lo
) VALUES (
    @tenant_id, @name, @filter_channel_types, @filter_account_ids, @filter_conversation_ids,
    @deliver_policy, sqlc.narg('start_time'), @ack_wait_ms, @max_deliver, @max_ack_pending, @ordering, @stage,
    '0', 0, CASE WHEN @deliver_policy::text = 'new' THEN pg_current_snapshot() ELSE '1:1:'::pg_snapshot END
)
ON CONFLICT (tenant_id, name) DO UPDATE SET
    filter_channel_types = EXCLUDED.filter_channel_types,
    filter_account_ids = EXCLUDED.filter_account_ids,
    filter_conversation_ids = EXCLUDED.filter_conversation_ids,
    ack_wait_ms = EXCLUDED.ack_wait_ms,
    max_deliver = EXCLUDED.max_deliver,
    max_ack_pending = EXCLUDED.max_ack_pending,
    ordering = EXCLUDED.ordering,
    updated_at = now()
RETURNING tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids, deliver_policy, start_time,
       ack_wait_ms, max_deliver, max_ack_pending, ordering, stage, cursor_xid, cursor_seq, log_lo::text AS log_lo,
       coalesce(log_hi::text, ''::text)::text AS log_hi, last_delivered_at, created_at, updated_at,
       swept, 'epoch'::timestamptz AS position_written_at, (xmax = 0) AS created;

-- name: ConsumerGet :one
SELECT tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids, deliver_policy, start_time,
       ack_wait_ms, max_deliver, max_ack_pending, ordering, stage, cursor_xid, cursor_seq, log_lo::text AS log_lo,
       coalesce(log_hi::text, ''::text)::text AS log_hi, last_delivered_at, created_at, updated_at,
       swept, coalesce(position_written_at, 'epoch'::timestamptz)::timestamptz AS position_written_at
FROM mio.consumer_state WHERE tenant_id = @tenant_id AND name = @name;

-- name: ConsumerLock :one
-- Serializes pulls of one consumer (position moves and claims): the row
-- lock of mio.consumers (a lock only: no new row version). The position
-- is read by a statement AFTER this one (mio.consumer_state), whose
-- snapshot sees the position the previous lock holder appended: this
-- statement's own snapshot predates its wait for the lock. FOR NO KEY
-- UPDATE, not FOR UPDATE: an ack's settle row checks its foreign key to
-- mio.consumers with FOR KEY SHARE, which FOR UPDATE blocks — every ack
-- waited for the pull in flight. Pulls, config changes (UPDATE) and the
-- delete still exclude each other.
SELECT true AS locked FROM mio.consumers WHERE tenant_id = @tenant_id AND name = @name FOR NO KEY UPDATE;

-- name: ConsumerDelete :execrows
DELETE FROM mio.consumers WHERE tenant_id = @tenant_id AND name = @name;

-- name: ConsumerList :many
SELECT tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids, deliver_policy, start_time,
       ack_wait_ms, max_deliver, max_ack_pending, ordering, stage, cursor_xid, cursor_seq, log_lo::text AS log_lo,
       coalesce(log_hi::text, ''::text)::text AS log_hi, last_delivered_at, created_at, updated_at,
       swept, coalesce(position_written_at, 'epoch'::timestamptz)::timestamptz AS position_written_at
FROM mio.consumer_state WHERE tenant_id = @tenant_id ORDER BY name;

-- name: ConsumerPage :many
-- Keyset page of the tenant's consumers by name.
SELECT tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids, deliver_policy, start_time,
       ack_wait_ms, max_deliver, max_ack_pending, ordering, stage, cursor_xid, cursor_seq, log_lo::text AS log_lo,
       coalesce(log_hi::text, ''::text)::text AS log_hi, last_delivered_at, created_at, updated_at,
       swept, coalesce(position_written_at, 'epoch'::timestamptz)::timestamptz AS position_written_at
FROM mio.consumer_state WHERE tenant_id = @tenant_id AND name > @after_name::text ORDER BY name LIMIT @max_rows;

-- name: ConsumerAdvance :exec
-- Appends a consumer's position (migration 00008: a pull never updates a
-- row), stamping its last delivery when @delivered.
INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at)
SELECT @tenant_id::uuid, @name::text, g.gen, (@log_lo::text)::pg_snapshot, (sqlc.narg('log_hi')::text)::pg_snapshot,
       @cursor_xid::xid8, @cursor_seq::bigint, @swept::bigint,
       CASE WHEN @delivered::bool THEN now() ELSE sqlc.narg('last_delivered_at')::timestamptz END
FROM mio.consumer_log_gen AS g;

-- name: StreamReady :many
-- The next rows of the ready stage in the consumer's window (@lo, @hi]
-- after (@cursor_xid, @cursor_seq) matching its filter (mio.log_ready;
-- docs/architecture.md, "Reading the log"). @hi is a snapshot taken by
-- this transaction no later than this statement, so every row of a
-- transaction it sees as committed is visible here.
SELECT i.id, i.ready_xid AS xid, i.ready_seq AS seq, i.seq AS message_seq, i.account_id, i.conversation_id
FROM mio.log_ready(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, @cursor_xid::xid8, @cursor_seq::bigint,
    @channel_types::text[], @account_ids::uuid[], @conversation_ids::text[], sqlc.narg('start_time')::timestamptz, @max_rows::int) AS i
ORDER BY i.ready_xid, i.ready_seq;

-- name: StreamReceived :many
-- As StreamReady, for the received stage (ordered by insert position).
SELECT i.id, i.xid, i.seq, i.seq AS message_seq, i.account_id, i.conversation_id
FROM mio.log_received(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, @cursor_xid::xid8, @cursor_seq::bigint,
    @channel_types::text[], @account_ids::uuid[], @conversation_ids::text[], sqlc.narg('start_time')::timestamptz, @max_rows::int) AS i
ORDER BY i.xid, i.seq;

-- name: SnapshotNow :one
SELECT pg_current_snapshot()::text AS snapshot;

-- name: DeliveryInsertBatch :many
-- Takes stream rows into the consumer: leased at once (ordering none) or
-- pending (ordering conversation, claimed afterwards in order). Their take
-- positions are batch * 4096 + index, the batch drawn from the lease-range
-- id sequence, so they follow every position taken before (migration
-- 00007). At most 4096 rows.
WITH b AS (SELECT nextval('mio.consumer_take_ids') * 4096 AS base)
INSERT INTO mio.consumer_deliveries (
    tenant_id, consumer_name, message_id, pos, message_seq, conversation_key, state,
    delivery_id, delivery_count, lease_expires_at
)
SELECT @tenant_id::uuid, @consumer_name::text, t.message_id, b.base + t.idx, t.message_seq, t.conversation_key,
       CASE WHEN @lease::bool THEN 'leased' ELSE 'pending' END,
       CASE WHEN @lease::bool THEN gen_random_uuid() END,
       CASE WHEN @lease::bool THEN 1 ELSE 0 END,
       CASE WHEN @lease::bool THEN now() + @ack_wait::interval END
FROM b CROSS JOIN (
    SELECT unnest(@message_ids::uuid[]) AS message_id,
           unnest(@message_seqs::bigint[]) AS message_seq,
           unnest(@conversation_keys::text[]) AS conversation_key,
           generate_series(0, cardinality(@message_ids::uuid[]) - 1) AS idx
) AS t
ON CONFLICT DO NOTHING
RETURNING message_id, delivery_id, delivery_count, message_seq;

-- name: DeliveryExhaust :execrows
-- Dead-letters deliveries that are due again but used up max_deliver.
-- Due rows are found by range scans of the due indexes (collected into an
-- array first), never by walking every outstanding delivery.
UPDATE mio.consumer_deliveries AS d
SET state = 'dead', delivery_id = NULL, lease_expires_at = NULL, updated_at = now(),
    last_error = CASE WHEN d.last_error = '' THEN 'max_deliver exceeded' ELSE d.last_error || ' (max_deliver exceeded)' END
WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name
  AND d.message_id = ANY (ARRAY(
      SELECT p.message_id FROM mio.consumer_deliveries AS p
      WHERE p.tenant_id = @tenant_id AND p.consumer_name = @consumer_name AND p.state = 'pending' AND p.available_at <= now()
        AND p.delivery_count >= @max_deliver::int
      UNION ALL
      SELECT l.message_id FROM mio.consumer_deliveries AS l
      WHERE l.tenant_id = @tenant_id AND l.consumer_name = @consumer_name AND l.state = 'leased' AND l.lease_expires_at <= now()
        AND l.delivery_count >= @max_deliver::int
  ))
  AND ((d.state = 'pending' AND d.available_at <= now()) OR (d.state = 'leased' AND d.lease_expires_at <= now()));

-- name: DeliveryClaimDue :many
-- Redeliveries for ordering none: due pending rows (nak'd) and expired
-- leases, found by range scans of the due indexes, oldest stream position
-- first. Pulls of a consumer are serialized by its row lock; a concurrent
-- ack of the same row wins or loses cleanly through the recheck.
UPDATE mio.consumer_deliveries AS d
SET state = 'leased', delivery_id = gen_random_uuid(), delivery_count = d.delivery_count + 1,
    lease_expires_at = now() + @ack_wait::interval, updated_at = now()
WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name
  AND d.message_id = ANY (ARRAY(
      SELECT u.message_id FROM (
          SELECT p.message_id, p.pos FROM mio.consumer_deliveries AS p
          WHERE p.tenant_id = @tenant_id AND p.consumer_name = @consumer_name AND p.state = 'pending' AND p.available_at <= now()
          UNION ALL
          SELECT l.message_id, l.pos FROM mio.consumer_deliveries AS l
          WHERE l.tenant_id = @tenant_id AND l.consumer_name = @consumer_name AND l.state = 'leased' AND l.lease_expires_at <= now()
      ) AS u
      ORDER BY u.pos
      LIMIT @max_rows
  ))
  AND ((d.state = 'pending' AND d.available_at <= now()) OR (d.state = 'leased' AND d.lease_expires_at <= now()))
RETURNING d.message_id, d.delivery_id, d.delivery_count, d.message_seq;

-- name: DeliveryClaimHeads :many
-- Ordering conversation: lease the head of each conversation when it is
-- due and no other delivery of that conversation is leased; at most one
-- unsettled delivery per conversation.
UPDATE mio.consumer_deliveries AS d
SET state = 'leased', delivery_id = gen_random_uuid(), delivery_count = d.delivery_count + 1,
    lease_expires_at = now() + @ack_wait::interval, updated_at = now()
FROM (
    SELECT h.message_id FROM (
        SELECT DISTINCT ON (c.conversation_key) c.message_id, c.state, c.available_at, c.lease_expires_at, c.pos
        FROM mio.consumer_deliveries AS c
        WHERE c.tenant_id = @tenant_id AND c.consumer_name = @consumer_name AND c.state <> 'dead'
        ORDER BY c.conversation_key, c.pos
    ) AS h
    WHERE (h.state = 'pending' AND h.available_at <= now()) OR (h.state = 'leased' AND h.lease_expires_at <= now())
    ORDER BY h.pos
    LIMIT @max_rows
) AS due
WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name AND d.message_id = due.message_id
  AND ((d.state = 'pending' AND d.available_at <= now()) OR (d.state = 'leased' AND d.lease_expires_at <= now()))
RETURNING d.message_id, d.delivery_id, d.delivery_count, d.message_seq;

-- name: DeliveryPendingCount :one
SELECT count(*) FROM mio.consumer_deliveries
WHERE tenant_id = @tenant_id AND consumer_name = @consumer_name AND state = 'pending';

-- name: DeliveryAck :many
DELETE FROM mio.consumer_deliveries
WHERE tenant_id = @tenant_id AND consumer_name = @consumer_name AND state = 'leased'
  AND delivery_id = ANY (@delivery_ids::uuid[])
RETURNING delivery_id;

-- name: DeliveryNak :many
UPDATE mio.consumer_deliveries AS d
SET state = 'pending', delivery_id = NULL, lease_expires_at = NULL, updated_at = now(),
    available_at = now() + @delay::interval
FROM (
    SELECT c.message_id, c.delivery_id AS old_delivery_id FROM mio.consumer_deliveries AS c
    WHERE c.tenant_id = @tenant_id AND c.consumer_name = @consumer_name AND c.state = 'leased'
      AND c.delivery_id = ANY (@delivery_ids::uuid[])
    FOR UPDATE
) AS o
WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name AND d.message_id = o.message_id
RETURNING o.old_delivery_id;

-- name: DeliveryTerm :many
UPDATE mio.consumer_deliveries AS d
SET state = 'dead', delivery_id = NULL, lease_expires_at = NULL, updated_at = now(),
    last_error = 'terminated: ' || @reason::text
FROM (
    SELECT c.message_id, c.delivery_id AS old_delivery_id FROM mio.consumer_deliveries AS c
    WHERE c.tenant_id = @tenant_id AND c.consumer_name = @consumer_name AND c.state = 'leased'
      AND c.delivery_id = ANY (@delivery_ids::uuid[])
    FOR UPDATE
) AS o
WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name AND d.message_id = o.message_id
RETURNING o.old_delivery_id;

-- name: DeliveryExtend :many
UPDATE mio.consumer_deliveries
SET lease_expires_at = now() + @ack_wait::interval, updated_at = now()
WHERE tenant_id = @tenant_id AND consumer_name = @consumer_name AND state = 'leased'
  AND delivery_id = ANY (@delivery_ids::uuid[])
RETURNING delivery_id;

-- name: ConsumerStats :one
WITH c AS (SELECT swept FROM mio.consumer_state WHERE tenant_id = @tenant_id AND name = @consumer_name)
SELECT
    count(*) FILTER (WHERE d.state = 'pending') AS pending,
    (count(*) FILTER (WHERE d.state = 'leased')
    + (SELECT coalesce(sum(cardinality(r.message_ids) - coalesce((
        SELECT sum(cardinality(x.idxs)) FROM mio.consumer_settles AS x
        WHERE x.tenant_id = r.tenant_id AND x.consumer_name = r.consumer_name AND x.lease_id = r.id), 0)), 0)
       FROM mio.consumer_leases AS r
       WHERE r.tenant_id = @tenant_id AND r.consumer_name = @consumer_name AND r.id > (SELECT swept FROM c)))::bigint AS ack_pending,
    count(*) FILTER (WHERE d.state <> 'dead' AND d.delivery_count > 1) AS redelivered,
    count(*) FILTER (WHERE d.state = 'dead') AS dead,
    coalesce(extract(epoch FROM now() - min(d.created_at) FILTER (WHERE d.state = 'pending')), 0)::float8 AS oldest_pending_age_seconds
FROM mio.consumer_deliveries AS d
WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name;

-- name: InboxGetMany :many
SELECT id, envelope, raw FROM mio.inbox WHERE tenant_id = @tenant_id AND id = ANY (@ids::uuid[]);

-- name: StreamReadyBacklog :one
-- Rows of the ready stage the consumer has not read (not visible in its
-- lo, and not already read in its window) matching the filter, counted up
-- to @max_rows. Rows of transactions still running are not visible here.
-- Two index scans, as in mio.log_ready: by xid equality for the
-- transactions running at lo (the LIMIT keeps each probe a nested index
-- lookup), and a range from pg_snapshot_xmax(lo). (One OR of the two was
-- planned as a walk over every row of the tenant: ~0.13 s per million rows
-- of history, on every lag gauge refresh of every consumer.)
SELECT count(*) FROM (
    SELECT 1 FROM (
        SELECT r.ready_xid, r.ready_seq, r.channel_type, r.account_id, r.conversation_id
        FROM pg_snapshot_xip((@lo::text)::pg_snapshot) AS x (xid)
        CROSS JOIN LATERAL (SELECT i.* FROM mio.inbox AS i WHERE i.tenant_id = @tenant_id AND i.ready_xid = x.xid LIMIT @max_rows) AS r
        UNION ALL
        SELECT i.ready_xid, i.ready_seq, i.channel_type, i.account_id, i.conversation_id
        FROM mio.inbox AS i
        WHERE i.tenant_id = @tenant_id AND i.ready_xid >= pg_snapshot_xmax((@lo::text)::pg_snapshot)
    ) AS i
    WHERE NOT mio.log_read(i.ready_xid, i.ready_seq, (@lo::text)::pg_snapshot, (sqlc.narg('hi')::text)::pg_snapshot,
                           @cursor_xid::xid8, @cursor_seq::bigint)
      AND (cardinality(@channel_types::text[]) = 0 OR i.channel_type = ANY (@channel_types::text[]))
      AND (cardinality(@account_ids::uuid[]) = 0 OR i.account_id = ANY (@account_ids::uuid[]))
      AND (cardinality(@conversation_ids::text[]) = 0 OR i.conversation_id = ANY (@conversation_ids::text[]))
    LIMIT @max_rows
) AS t;

-- name: StreamReceivedBacklog :one
-- As StreamReadyBacklog, for the received stage.
SELECT count(*) FROM (
    SELECT 1 FROM (
        SELECT r.xid, r.seq, r.channel_type, r.account_id, r.conversation_id
        FROM pg_snapshot_xip((@lo::text)::pg_snapshot) AS x (xid)
        CROSS JOIN LATERAL (SELECT i.* FROM mio.inbox AS i WHERE i.tenant_id = @tenant_id AND i.xid = x.xid LIMIT @max_rows) AS r
        UNION ALL
        SELECT i.xid, i.seq, i.channel_type, i.account_id, i.conversation_id
        FROM mio.inbox AS i
        WHERE i.tenant_id = @tenant_id AND i.xid >= pg_snapshot_xmax((@lo::text)::pg_snapshot)
    ) AS i
    WHERE NOT mio.log_read(i.xid, i.seq, (@lo::text)::pg_snapshot, (sqlc.narg('hi')::text)::pg_snapshot,
                           @cursor_xid::xid8, @cursor_seq::bigint)
      AND (cardinality(@channel_types::text[]) = 0 OR i.channel_type = ANY (@channel_types::text[]))
      AND (cardinality(@account_ids::uuid[]) = 0 OR i.account_id = ANY (@account_ids::uuid[]))
      AND (cardinality(@conversation_ids::text[]) = 0 OR i.conversation_id = ANY (@conversation_ids::text[]))
    LIMIT @max_rows
) AS t;

-- name: ConsumerHealthMany :many
-- The statistics of several consumers of a tenant in one statement (an
-- admin page of consumers): deliveries waiting, leased (lease-range
-- members outstanding included), redelivered and dead, the oldest waiting
-- delivery's age, and the stream messages not yet taken counted up to
-- @max_rows — as mio.queue_health computes them.
SELECT c.name::text AS name, d.pending, (d.ack_pending + l.leased)::bigint AS ack_pending, d.redelivered, d.dead,
       coalesce(extract(epoch FROM now() - d.oldest_pending), 0)::float8 AS oldest_pending_age_seconds, u.untaken
FROM mio.consumer_state AS c
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE x.state = 'pending') AS pending,
           count(*) FILTER (WHERE x.state = 'leased') AS ack_pending,
           count(*) FILTER (WHERE x.state <> 'dead' AND x.delivery_count > 1) AS redelivered,
           count(*) FILTER (WHERE x.state = 'dead') AS dead,
           min(x.created_at) FILTER (WHERE x.state = 'pending') AS oldest_pending
    FROM mio.consumer_deliveries AS x
    WHERE x.tenant_id = c.tenant_id AND x.consumer_name = c.name
) AS d
CROSS JOIN LATERAL (
    SELECT coalesce(sum(cardinality(r.message_ids) - coalesce((
               SELECT sum(cardinality(s.idxs)) FROM mio.consumer_settles AS s
               WHERE s.tenant_id = r.tenant_id AND s.consumer_name = r.consumer_name AND s.lease_id = r.id), 0)), 0)::bigint AS leased
    FROM mio.consumer_leases AS r
    WHERE r.tenant_id = c.tenant_id AND r.consumer_name = c.name AND r.id > c.swept
) AS l
CROSS JOIN LATERAL (
    SELECT count(*) AS untaken
    FROM (
        SELECT i.received_at
        FROM mio.log_ready(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                           c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, @max_rows::int) AS i
        WHERE c.stage = 'ready'
        UNION ALL
        SELECT i.received_at
        FROM mio.log_received(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                              c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, @max_rows::int) AS i
        WHERE c.stage = 'received'
    ) AS s
) AS u
WHERE c.tenant_id = @tenant_id AND c.name = ANY (@names::text[]);
