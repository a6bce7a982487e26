-- Agents first: the delivery-id key and the live-lease acks
-- of a reply with ack.

-- name: DeliveryIDKey :one
SELECT key FROM mio.delivery_id_key WHERE singleton;

-- name: LeaseAckLive :many
-- A reply with ack's acknowledgement of lease-range members
-- (@lease_ids[k], @idxs[k]) whose range is still live: mio.consumer_ack's range ack with the
-- expiry checked, returning each acknowledged member's message routing
-- (NULL when retention removed the message). The caller holds LeaseLock
-- on the ranges. The values are read through sub-selects no plan can
-- see, so a custom plan costs what the generic one does and the server
-- keeps the generic plan from a connection's sixth execution on
-- (planning the partitioned ring tables costs more than running them).
WITH req AS (
    SELECT DISTINCT u.lease_id, u.idx
    FROM (SELECT unnest((SELECT @lease_ids::bigint[])) AS lease_id, unnest((SELECT @idxs::int[])) AS idx) AS u
),
l AS MATERIALIZED (
    SELECT r.id, r.message_ids FROM mio.consumer_leases AS r
    WHERE r.tenant_id = (SELECT @tenant_id::uuid) AND r.consumer_name = (SELECT @consumer_name::text)
      AND r.id = ANY ((SELECT @lease_ids::bigint[])::bigint[])
      AND r.expires_at > now()
),
done AS MATERIALIZED (
    SELECT s.lease_id, x.idx FROM mio.consumer_settles AS s CROSS JOIN LATERAL unnest(s.idxs) AS x (idx)
    WHERE s.tenant_id = (SELECT @tenant_id::uuid) AND s.consumer_name = (SELECT @consumer_name::text)
      AND s.lease_id = ANY ((SELECT @lease_ids::bigint[])::bigint[])
),
hit AS (
    SELECT req.lease_id, req.idx, l.message_ids[req.idx + 1] AS message_id
    FROM req JOIN l ON l.id = req.lease_id
    WHERE req.idx >= 0 AND req.idx < cardinality(l.message_ids)
      AND NOT EXISTS (SELECT 1 FROM done WHERE done.lease_id = req.lease_id AND done.idx = req.idx)
),
ins AS (
    INSERT INTO mio.consumer_settles (tenant_id, consumer_name, gen, lease_id, idxs)
    SELECT @tenant_id::uuid, @consumer_name::text, (SELECT gen FROM mio.consumer_log_gen), hit.lease_id, array_agg(hit.idx)
    FROM hit GROUP BY hit.lease_id
)
SELECT hit.lease_id::bigint AS lease_id, hit.idx::int AS idx, i.account_id, i.conversation_id,
       coalesce(i.envelope ->> 'thread_id', '')::text AS thread_id
FROM hit LEFT JOIN mio.inbox AS i ON i.tenant_id = (SELECT @tenant_id::uuid) AND i.id = hit.message_id;

-- name: DeliveryAckLive :many
-- A reply with ack's acknowledgement of per-message deliveries whose
-- lease is live, returning each one's message routing (NULL when
-- retention removed the message). Values through sub-selects, as
-- LeaseAckLive's.
WITH d AS (
    DELETE FROM mio.consumer_deliveries
    WHERE tenant_id = (SELECT @tenant_id::uuid) AND consumer_name = (SELECT @consumer_name::text) AND state = 'leased'
      AND delivery_id = ANY ((SELECT @delivery_ids::uuid[])::uuid[]) AND lease_expires_at > now()
    RETURNING delivery_id, message_id
)
SELECT d.delivery_id::uuid AS delivery_id, i.account_id, i.conversation_id, coalesce(i.envelope ->> 'thread_id', '')::text AS thread_id
FROM d LEFT JOIN mio.inbox AS i ON i.tenant_id = (SELECT @tenant_id::uuid) AND i.id = d.message_id;
