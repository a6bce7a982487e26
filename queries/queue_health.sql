-- name: ConsumerOldestPendingAge :one
-- A consumer's oldest_pending_age in mio.queue_health: the oldest
-- delivery waiting or message not yet taken.
SELECT coalesce(extract(epoch FROM h.oldest_pending_age), 0)::float8 AS seconds
FROM mio.queue_health AS h
WHERE h.kind = 'consumer' AND h.tenant_id = @tenant_id AND h.consumer = @consumer_name;
