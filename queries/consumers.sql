-- name: ConsumerUpsert :one
-- Creates a consumer (cursor from its deliver policy) or updates its
-- configuration; an update never moves the cursor.
INSERT INTO mio.consumers (
    tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids,
    deliver_policy, start_time, ack_wait_ms, max_deliver, max_ack_pending, ordering, stage,
    cursor_xid, cursor_seq
) VALUES (
    @tenant_id, @name, @filter_channel_types, @filter_account_ids, @filter_conversation_ids,
    @deliver_policy, sqlc.narg('start_time'), @ack_wait_ms, @max_deliver, @max_ack_pending, @ordering, @stage,
    CASE WHEN @deliver_policy::text = 'new' THEN pg_snapshot_xmin(pg_current_snapshot()) ELSE '0'::xid8 END, 0
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
RETURNING *, (xmax = 0) AS created;

-- name: ConsumerGet :one
SELECT * FROM mio.consumers WHERE tenant_id = @tenant_id AND name = @name;

-- name: ConsumerLock :one
-- Serializes pulls of one consumer (cursor advance and claims).
SELECT * FROM mio.consumers WHERE tenant_id = @tenant_id AND name = @name FOR UPDATE;

-- name: ConsumerDelete :execrows
DELETE FROM mio.consumers WHERE tenant_id = @tenant_id AND name = @name;

-- name: ConsumerList :many
SELECT * FROM mio.consumers WHERE tenant_id = @tenant_id ORDER BY name;

-- name: ConsumerAdvance :exec
UPDATE mio.consumers
SET cursor_xid = @cursor_xid, cursor_seq = @cursor_seq,
    last_delivered_at = CASE WHEN @delivered::bool THEN now() ELSE last_delivered_at END
WHERE tenant_id = @tenant_id AND name = @name;

-- name: StreamReady :many
-- The next rows of the ready stage after the cursor and below @horizon (a
-- snapshot xmin taken by an EARLIER statement: every transaction below it
-- had ended before this statement's snapshot, so all its rows are
-- visible), matching the consumer's filter.
SELECT i.id, i.ready_xid AS xid, i.ready_seq AS seq, i.seq AS message_seq, i.account_id, i.conversation_id
FROM mio.inbox AS i
WHERE i.tenant_id = @tenant_id
  AND i.ready_xid IS NOT NULL
  AND i.ready_xid < @horizon::xid8
  AND (i.ready_xid, i.ready_seq) > (@cursor_xid::xid8, @cursor_seq::bigint)
  AND (cardinality(@channel_types::text[]) = 0 OR i.channel_type = ANY (@channel_types::text[]))
  AND (cardinality(@account_ids::uuid[]) = 0 OR i.account_id = ANY (@account_ids::uuid[]))
  AND (cardinality(@conversation_ids::text[]) = 0 OR i.conversation_id = ANY (@conversation_ids::text[]))
  AND (sqlc.narg('start_time')::timestamptz IS NULL OR i.received_at >= sqlc.narg('start_time')::timestamptz)
ORDER BY i.ready_xid, i.ready_seq
LIMIT @max_rows;

-- name: StreamReceived :many
-- As StreamReady, for the received stage (ordered by insert position).
SELECT i.id, i.xid, i.seq, i.seq AS message_seq, i.account_id, i.conversation_id
FROM mio.inbox AS i
WHERE i.tenant_id = @tenant_id
  AND i.xid < @horizon::xid8
  AND (i.xid, i.seq) > (@cursor_xid::xid8, @cursor_seq::bigint)
  AND (cardinality(@channel_types::text[]) = 0 OR i.channel_type = ANY (@channel_types::text[]))
  AND (cardinality(@account_ids::uuid[]) = 0 OR i.account_id = ANY (@account_ids::uuid[]))
  AND (cardinality(@conversation_ids::text[]) = 0 OR i.conversation_id = ANY (@conversation_ids::text[]))
  AND (sqlc.narg('start_time')::timestamptz IS NULL OR i.received_at >= sqlc.narg('start_time')::timestamptz)
ORDER BY i.xid, i.seq
LIMIT @max_rows;

-- name: SnapshotHorizon :one
SELECT pg_snapshot_xmin(pg_current_snapshot())::xid8 AS horizon;

-- name: DeliveryInsertBatch :many
-- Takes stream rows into the consumer: leased at once (ordering none) or
-- pending (ordering conversation, claimed afterwards in order).
INSERT INTO mio.consumer_deliveries (
    tenant_id, consumer_name, message_id, xid, seq, message_seq, conversation_key, state,
    delivery_id, delivery_count, lease_expires_at
)
SELECT @tenant_id::uuid, @consumer_name::text, t.message_id, t.xid, t.seq, t.message_seq, t.conversation_key,
       CASE WHEN @lease::bool THEN 'leased' ELSE 'pending' END,
       CASE WHEN @lease::bool THEN gen_random_uuid() END,
       CASE WHEN @lease::bool THEN 1 ELSE 0 END,
       CASE WHEN @lease::bool THEN now() + @ack_wait::interval END
FROM (
    SELECT unnest(@message_ids::uuid[]) AS message_id,
           unnest(@xids::xid8[]) AS xid,
           unnest(@seqs::bigint[]) AS seq,
           unnest(@message_seqs::bigint[]) AS message_seq,
           unnest(@conversation_keys::text[]) AS conversation_key
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
          SELECT p.message_id, p.xid, p.seq FROM mio.consumer_deliveries AS p
          WHERE p.tenant_id = @tenant_id AND p.consumer_name = @consumer_name AND p.state = 'pending' AND p.available_at <= now()
          UNION ALL
          SELECT l.message_id, l.xid, l.seq FROM mio.consumer_deliveries AS l
          WHERE l.tenant_id = @tenant_id AND l.consumer_name = @consumer_name AND l.state = 'leased' AND l.lease_expires_at <= now()
      ) AS u
      ORDER BY u.xid, u.seq
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
        SELECT DISTINCT ON (c.conversation_key) c.message_id, c.state, c.available_at, c.lease_expires_at, c.xid, c.seq
        FROM mio.consumer_deliveries AS c
        WHERE c.tenant_id = @tenant_id AND c.consumer_name = @consumer_name AND c.state <> 'dead'
        ORDER BY c.conversation_key, c.xid, c.seq
    ) AS h
    WHERE (h.state = 'pending' AND h.available_at <= now()) OR (h.state = 'leased' AND h.lease_expires_at <= now())
    ORDER BY h.xid, h.seq
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
SELECT
    count(*) FILTER (WHERE d.state = 'pending') AS pending,
    (count(*) FILTER (WHERE d.state = 'leased')
    + (SELECT coalesce(sum(cardinality(r.message_ids) - cardinality(r.settled)), 0) FROM mio.consumer_leases AS r
       WHERE r.tenant_id = @tenant_id AND r.consumer_name = @consumer_name))::bigint AS ack_pending,
    count(*) FILTER (WHERE d.state <> 'dead' AND d.delivery_count > 1) AS redelivered,
    count(*) FILTER (WHERE d.state = 'dead') AS dead,
    coalesce(extract(epoch FROM now() - min(d.created_at) FILTER (WHERE d.state = 'pending')), 0)::float8 AS oldest_pending_age_seconds
FROM mio.consumer_deliveries AS d
WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name;

-- name: InboxGetMany :many
SELECT id, envelope, raw FROM mio.inbox WHERE tenant_id = @tenant_id AND id = ANY (@ids::uuid[]);

-- name: StreamReadyBacklog :one
-- Rows of the ready stage after the cursor matching the filter (not yet
-- taken by the consumer), counted up to @max_rows.
SELECT count(*) FROM (
    SELECT 1 FROM mio.inbox AS i
    WHERE i.tenant_id = @tenant_id AND i.ready_xid IS NOT NULL
      AND (i.ready_xid, i.ready_seq) > (@cursor_xid::xid8, @cursor_seq::bigint)
      AND (cardinality(@channel_types::text[]) = 0 OR i.channel_type = ANY (@channel_types::text[]))
      AND (cardinality(@account_ids::uuid[]) = 0 OR i.account_id = ANY (@account_ids::uuid[]))
      AND (cardinality(@conversation_ids::text[]) = 0 OR i.conversation_id = ANY (@conversation_ids::text[]))
    LIMIT @max_rows
) AS t;

-- name: StreamReceivedBacklog :one
SELECT count(*) FROM (
    SELECT 1 FROM mio.inbox AS i
    WHERE i.tenant_id = @tenant_id
      AND (i.xid, i.seq) > (@cursor_xid::xid8, @cursor_seq::bigint)
      AND (cardinality(@channel_types::text[]) = 0 OR i.channel_type = ANY (@channel_types::text[]))
      AND (cardinality(@account_ids::uuid[]) = 0 OR i.account_id = ANY (@account_ids::uuid[]))
      AND (cardinality(@conversation_ids::text[]) = 0 OR i.conversation_id = ANY (@conversation_ids::text[]))
    LIMIT @max_rows
) AS t;

-- name: ConsumerPullState :one
-- Everything a pull needs before claiming, in one round trip: live leases
-- (per-message and lease ranges, for max_ack_pending), whether anything is
-- due again (nak delays and expiries: the claim statements are skipped
-- when not), and the snapshot horizon.
SELECT
    ((SELECT count(*) FROM mio.consumer_deliveries AS l
     WHERE l.tenant_id = @tenant_id AND l.consumer_name = @consumer_name AND l.state = 'leased' AND l.lease_expires_at > now())
    + (SELECT coalesce(sum(cardinality(r.message_ids) - cardinality(r.settled)), 0) FROM mio.consumer_leases AS r
       WHERE r.tenant_id = @tenant_id AND r.consumer_name = @consumer_name AND r.expires_at > now()))::bigint AS leased,
    (EXISTS (SELECT 1 FROM mio.consumer_deliveries AS p
             WHERE p.tenant_id = @tenant_id AND p.consumer_name = @consumer_name AND p.state = 'pending' AND p.available_at <= now())
     OR EXISTS (SELECT 1 FROM mio.consumer_deliveries AS e
                WHERE e.tenant_id = @tenant_id AND e.consumer_name = @consumer_name AND e.state = 'leased' AND e.lease_expires_at <= now()))::bool AS due,
    EXISTS (SELECT 1 FROM mio.consumer_leases AS x
            WHERE x.tenant_id = @tenant_id AND x.consumer_name = @consumer_name) AS ranges,
    EXISTS (SELECT 1 FROM mio.consumer_leases AS x
            WHERE x.tenant_id = @tenant_id AND x.consumer_name = @consumer_name AND x.expires_at <= now()) AS ranges_expired,
    pg_snapshot_xmin(pg_current_snapshot())::xid8 AS horizon;
