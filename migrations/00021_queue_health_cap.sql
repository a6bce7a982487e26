-- +goose Up
-- mio.queue_health counts the messages a consumer has not taken yet up to
-- 100 (was 10000): each counted message is a heap visit, and the view
-- answers for every consumer at once (the admin API, the console, the
-- queue gauges every 15 s). Measured with 100 consumers 20,000 messages
-- behind: 10000 each took seconds per call, 1000 each 170-270 ms (mio bench
-- admin, 1M inbox rows); 100 keeps the whole view within the admin
-- latency target. The age of
-- the oldest is unchanged; a consumer further behind shows pending 100+
-- (admin.ConsumerInfo's backlog_cap says so).
SET lock_timeout = '10s';
CREATE OR REPLACE VIEW mio.queue_health WITH (security_invoker = true) AS
SELECT 'consumer'::text AS kind, c.tenant_id, c.name AS consumer, NULL::text AS queue,
       d.pending + u.untaken AS pending, d.ack_pending + l.leased AS ack_pending, d.redelivered, d.dead,
       coalesce(now() - least(d.oldest_pending, u.oldest_untaken), interval '0') AS oldest_pending_age,
       c.last_delivered_at,
       NULL::bigint AS available, NULL::bigint AS running, NULL::bigint AS retryable,
       NULL::interval AS oldest_available_age
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
    -- Outstanding lease-range members (migration 00008): ranges above the
    -- consumer's sweep, less the members their settle rows name.
    SELECT coalesce(sum(cardinality(r.message_ids) - coalesce((
               SELECT sum(cardinality(s.idxs)) FROM mio.consumer_settles AS s
               WHERE s.tenant_id = r.tenant_id AND s.consumer_name = r.consumer_name AND s.lease_id = r.id), 0)), 0)::bigint AS leased
    FROM mio.consumer_leases AS r
    WHERE r.tenant_id = c.tenant_id AND r.consumer_name = c.name AND r.id > c.swept
) AS l
CROSS JOIN LATERAL (
    SELECT count(*) AS untaken, min(s.received_at) AS oldest_untaken
    FROM (
        SELECT i.received_at
        FROM mio.log_ready(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                           c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, 100) AS i
        WHERE c.stage = 'ready'
        UNION ALL
        SELECT i.received_at
        FROM mio.log_received(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                              c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, 100) AS i
        WHERE c.stage = 'received'
    ) AS s
) AS u
UNION ALL
SELECT 'river_queue'::text AS kind, NULL::uuid AS tenant_id, NULL::text AS consumer, q.queue,
       NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::interval, NULL::timestamptz,
       q.available, q.running, q.retryable, q.oldest_available_age
FROM mio.river_queue_depth() AS q;

-- +goose Down
SET lock_timeout = '10s';
CREATE OR REPLACE VIEW mio.queue_health WITH (security_invoker = true) AS
SELECT 'consumer'::text AS kind, c.tenant_id, c.name AS consumer, NULL::text AS queue,
       d.pending + u.untaken AS pending, d.ack_pending + l.leased AS ack_pending, d.redelivered, d.dead,
       coalesce(now() - least(d.oldest_pending, u.oldest_untaken), interval '0') AS oldest_pending_age,
       c.last_delivered_at,
       NULL::bigint AS available, NULL::bigint AS running, NULL::bigint AS retryable,
       NULL::interval AS oldest_available_age
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
    -- Outstanding lease-range members (migration 00008): ranges above the
    -- consumer's sweep, less the members their settle rows name.
    SELECT coalesce(sum(cardinality(r.message_ids) - coalesce((
               SELECT sum(cardinality(s.idxs)) FROM mio.consumer_settles AS s
               WHERE s.tenant_id = r.tenant_id AND s.consumer_name = r.consumer_name AND s.lease_id = r.id), 0)), 0)::bigint AS leased
    FROM mio.consumer_leases AS r
    WHERE r.tenant_id = c.tenant_id AND r.consumer_name = c.name AND r.id > c.swept
) AS l
CROSS JOIN LATERAL (
    SELECT count(*) AS untaken, min(s.received_at) AS oldest_untaken
    FROM (
        SELECT i.received_at
        FROM mio.log_ready(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                           c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, 10000) AS i
        WHERE c.stage = 'ready'
        UNION ALL
        SELECT i.received_at
        FROM mio.log_received(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                              c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, 10000) AS i
        WHERE c.stage = 'received'
    ) AS s
) AS u
UNION ALL
SELECT 'river_queue'::text AS kind, NULL::uuid AS tenant_id, NULL::text AS consumer, q.queue,
       NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::interval, NULL::timestamptz,
       q.available, q.running, q.retryable, q.oldest_available_age
FROM mio.river_queue_depth() AS q;
