-- Agents first (migration 00013): the delivery-id key and the lease check
-- of a reply with ack.

-- name: DeliveryIDKey :one
SELECT key FROM mio.delivery_id_key WHERE singleton;

-- name: DeliveryLeaseLive :one
-- The live lease of a per-message delivery of a consumer, locked until
-- the transaction ends, with the routing of its message: a reply with ack
-- takes it after moving a lease-range member out of its range. No row: the
-- lease expired, was settled or redelivered under another id.
SELECT d.message_id, i.account_id, i.conversation_id, coalesce(i.envelope ->> 'thread_id', '')::text AS thread_id
FROM mio.consumer_deliveries AS d
JOIN mio.inbox AS i ON i.tenant_id = d.tenant_id AND i.id = d.message_id
WHERE d.tenant_id = @tenant_id AND d.consumer_name = @consumer_name AND d.state = 'leased'
  AND d.delivery_id = @delivery_id AND d.lease_expires_at > now()
FOR UPDATE OF d;
