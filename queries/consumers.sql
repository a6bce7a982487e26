-- name: ConsumerUpsert :one
-- Creates a consumer (cursor from its deliver policy) or updates its
-- configuration; an update never moves the cursor.
INSERT INTO mio.consumers (
    tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids,
    deliver_policy, start_time, ack_wait_ms, max_deliver, max_ack_pending, ordering, stage,
    cursor_xid, cursor_seq, log_lo, backlog_base
) VALUES (
    @tenant_id, @name, @filter_channel_types, @filter_account_ids, @filter_conversation_ids,
    @deliver_policy, sqlc.narg('start_time'), @ack_wait_ms, @max_deliver, @max_ack_pending, @ordering, @stage,
    '0', 0, CASE WHEN @deliver_policy::text = 'new' THEN pg_current_snapshot() ELSE '1:1:'::pg_snapshot END,
    -- The base of a consumer being created: the matching rows before its
    -- starting position, as this statement's snapshot (its lo, for
    -- deliver_policy new) sees them. all: none. new: every one.
    -- by_start_time: those received before the start time. Row-by-row
    -- consumers: unused. docs/architecture.md, "Exact backlog".
    CASE WHEN EXISTS (SELECT 1 FROM mio.consumers AS e WHERE e.tenant_id = @tenant_id AND e.name = @name)
              OR mio.consumer_counts_rows(@filter_conversation_ids, sqlc.narg('start_time'), now())
              OR @deliver_policy = 'all'
         THEN 0
         WHEN @deliver_policy = 'new' THEN mio.stream_appended(@tenant_id, @stage, @filter_channel_types, @filter_account_ids)
         ELSE mio.stream_appended(@tenant_id, @stage, @filter_channel_types, @filter_account_ids) - (
             SELECT count(*) FROM mio.inbox AS i
             WHERE i.tenant_id = @tenant_id AND i.received_at >= sqlc.narg('start_time')
               AND (@stage = 'received' OR i.ready_xid IS NOT NULL)
               AND (cardinality(coalesce(@filter_channel_types, '{}')) = 0 OR i.channel_type = ANY (@filter_channel_types))
               AND (cardinality(coalesce(@filter_account_ids, '{}')) = 0 OR i.account_id = ANY (@filter_account_ids)))
         END
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
       swept, 'epoch'::timestamptz AS position_written_at, taken, (xmax = 0) AS created;

-- name: ConsumerGet :one
SELECT tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids, deliver_policy, start_time,
       ack_wait_ms, max_deliver, max_ack_pending, ordering, stage, cursor_xid, cursor_seq, log_lo::text AS log_lo,
       coalesce(log_hi::text, ''::text)::text AS log_hi, last_delivered_at, created_at, updated_at,
       swept, coalesce(position_written_at, 'epoch'::timestamptz)::timestamptz AS position_written_at, taken
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
       swept, coalesce(position_written_at, 'epoch'::timestamptz)::timestamptz AS position_written_at, taken
FROM mio.consumer_state WHERE tenant_id = @tenant_id ORDER BY name;

-- name: ConsumerPage :many
-- Keyset page of the tenant's consumers by name.
SELECT tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids, deliver_policy, start_time,
       ack_wait_ms, max_deliver, max_ack_pending, ordering, stage, cursor_xid, cursor_seq, log_lo::text AS log_lo,
       coalesce(log_hi::text, ''::text)::text AS log_hi, last_delivered_at, created_at, updated_at,
       swept, coalesce(position_written_at, 'epoch'::timestamptz)::timestamptz AS position_written_at, taken
FROM mio.consumer_state WHERE tenant_id = @tenant_id AND name > @after_name::text ORDER BY name LIMIT @max_rows;

-- name: ConsumerAdvance :exec
-- Appends a consumer's position (a pull never updates a row), stamping its
-- last delivery when @delivered, with @taken: the matching rows its position
-- has read.
INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at, taken)
SELECT @tenant_id::uuid, @name::text, g.gen, (@log_lo::text)::pg_snapshot, (sqlc.narg('log_hi')::text)::pg_snapshot,
       @cursor_xid::xid8, @cursor_seq::bigint, @swept::bigint,
       CASE WHEN @delivered::bool THEN now() ELSE sqlc.narg('last_delivered_at')::timestamptz END, @taken::bigint
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
-- id sequence, so they follow every position taken before. At most 4096
-- rows.
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

-- name: InboxGetMany :many
SELECT id, envelope, raw FROM mio.inbox WHERE tenant_id = @tenant_id AND id = ANY (@ids::uuid[]);

-- name: ConsumerHealthMany :many
-- The statistics of several consumers of a tenant in one statement, as
-- mio.queue_health answers them: pending (stream messages not taken yet
-- plus deliveries waiting, exact), leased (lease-range members
-- outstanding included), redelivered, dead, and the age of the oldest
-- pending one.
SELECT h.consumer::text AS name, h.pending::bigint AS pending, h.ack_pending::bigint AS ack_pending,
       h.redelivered::bigint AS redelivered, h.dead::bigint AS dead,
       coalesce(extract(epoch FROM h.oldest_pending_age), 0)::float8 AS oldest_pending_age_seconds
FROM mio.queue_health AS h
WHERE h.kind = 'consumer' AND h.tenant_id = @tenant_id AND h.consumer = ANY (@names::text[]);

-- name: ConsumerRebase :one
-- Resets a consumer's backlog base to agree with its position (a seek, a
-- filter change): its unread rows counted once, row by row. The caller
-- holds the consumer's row lock, taken by an earlier statement.
SELECT mio.consumer_rebase(@tenant_id, @name)::bigint AS backlog_base;

-- name: StreamCountsFoldTenant :one
-- Folds tenant @tenant_id's delta rows into one row per key (DELETE and
-- INSERT in one statement: a reader sees the rows before or after, the
-- same sums; rows a concurrent fold deleted first are neither deleted nor
-- summed again). Only keys with more than one row are rewritten. Returns
-- the rows folded away. The transaction's tenant must be @tenant_id.
WITH keys AS (
    SELECT s.stage, s.channel_type, s.account_id FROM mio.stream_counts AS s
    WHERE s.tenant_id = @tenant_id
    GROUP BY s.stage, s.channel_type, s.account_id
    HAVING count(*) > 1
), d AS (
    DELETE FROM mio.stream_counts AS s
    USING keys
    WHERE s.tenant_id = @tenant_id AND s.stage = keys.stage AND s.channel_type = keys.channel_type AND s.account_id = keys.account_id
    RETURNING s.stage, s.channel_type, s.account_id, s.n
), ins AS (
    INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
    SELECT @tenant_id, d.stage, d.channel_type, d.account_id, sum(d.n) FROM d
    GROUP BY d.stage, d.channel_type, d.account_id
    RETURNING 1
)
SELECT ((SELECT count(*) FROM d) - (SELECT count(*) FROM ins))::bigint AS folded;
