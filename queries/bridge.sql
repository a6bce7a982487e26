-- name: BridgeCursorGet :one
SELECT log_lo::text AS log_lo, coalesce(log_hi::text, ''::text)::text AS log_hi, after_xid::text AS after_xid, after_seq
FROM mio.bridge_cursors WHERE tenant_id = @tenant_id AND stream = @stream;

-- name: BridgeCursorAdvance :execrows
-- Moves a stream's position from the old one to the new one, creating it
-- on the first advance; 0 rows when another bridge moved it first
-- (compare-and-set).
INSERT INTO mio.bridge_cursors AS c (tenant_id, stream, log_lo, log_hi, after_xid, after_seq, updated_at)
VALUES (@tenant_id, @stream, (@new_lo::text)::pg_snapshot, (sqlc.narg('new_hi')::text)::pg_snapshot,
        (@new_xid::text)::xid8, @new_seq::bigint, now())
ON CONFLICT (tenant_id, stream) DO UPDATE
SET log_lo = excluded.log_lo, log_hi = excluded.log_hi, after_xid = excluded.after_xid,
    after_seq = excluded.after_seq, updated_at = now()
WHERE c.log_lo::text = @old_lo::text
  AND c.log_hi::text IS NOT DISTINCT FROM sqlc.narg('old_hi')::text
  AND c.after_xid = (@old_xid::text)::xid8 AND c.after_seq = @old_seq::bigint;

-- name: BridgeInboundReceived :many
-- The next messages of the tenant's received stage in the window (@lo,
-- @hi] after (@after_xid, @after_seq), in window order (mio.log_received).
SELECT i.id, i.account_id, i.channel_type, i.conversation_id, i.xid::text AS xid, i.seq, i.envelope, i.raw, i.received_at
FROM mio.log_received(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, (@after_xid::text)::xid8,
    @after_seq::bigint, '{}', '{}', '{}', NULL, @max_rows::int) AS i
ORDER BY i.xid, i.seq;

-- name: BridgeInboundReady :many
-- As BridgeInboundReceived, for the ready stage (mio.log_ready).
SELECT i.id, i.account_id, i.channel_type, i.conversation_id, i.ready_xid::text AS xid, i.ready_seq AS seq, i.envelope, i.raw,
       coalesce(i.ready_at, i.received_at)::timestamptz AS received_at
FROM mio.log_ready(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, (@after_xid::text)::xid8,
    @after_seq::bigint, '{}', '{}', '{}', NULL, @max_rows::int) AS i
ORDER BY i.ready_xid, i.ready_seq;

-- name: BridgeOutboxEvents :many
-- The next outbound events of the tenant in the window (@lo, @hi] after
-- (@after_xid, @after_seq), in window order, with their send's lane.
SELECT e.outbox_id, e.id, e.xid::text AS xid, e.event, e.machine, e.state, e.attempt_no, e.detail, e.at,
       o.account_id, o.channel_type, o.conversation_id
FROM mio.log_outbox_events(@tenant_id, (@lo::text)::pg_snapshot, (@hi::text)::pg_snapshot, (@after_xid::text)::xid8,
    @after_seq::bigint, @max_rows::int) AS e
JOIN mio.outbox AS o ON o.tenant_id = e.tenant_id AND o.id = e.outbox_id
ORDER BY e.xid, e.id;

-- name: BridgeTryLock :many
-- Session-level advisory locks per tenant (one publishing bridge per
-- tenant across replicas): takes those of @tenant_ids that are free and
-- returns them, in one round trip.
SELECT t.id::uuid AS tenant_id FROM unnest(@tenant_ids::uuid[]) AS t (id)
WHERE pg_try_advisory_lock(hashtextextended('mio.bridge:' || t.id::text, 0));

-- name: BridgeUnlock :exec
SELECT pg_advisory_unlock(hashtextextended('mio.bridge:' || @tenant_id::text, 0));

-- name: BridgePublishGet :one
-- Whether the tenant is published (true without a settings row).
SELECT coalesce((SELECT s.publish FROM mio.bridge_settings AS s WHERE s.tenant_id = @tenant_id), true)::boolean AS publish;

-- name: BridgePublishSet :exec
INSERT INTO mio.bridge_settings (tenant_id, publish, updated_at) VALUES (@tenant_id, @publish, now())
ON CONFLICT (tenant_id) DO UPDATE SET publish = excluded.publish, updated_at = now();

-- name: BridgeOutboxGetMany :many
-- The tenant's outbound messages with these ids (the sends of a batch of
-- outbound events).
SELECT * FROM mio.outbox WHERE tenant_id = @tenant_id AND id = ANY(@ids::uuid[]);

-- name: BridgeOutboxEventListMany :many
-- The timelines of these outbound messages, each oldest first.
SELECT * FROM mio.outbox_events
WHERE tenant_id = @tenant_id AND outbox_id = ANY(@ids::uuid[])
ORDER BY outbox_id, id;
