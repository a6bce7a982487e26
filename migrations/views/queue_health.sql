-- Per consumer and per River queue, what is waiting. For a consumer,
-- pending is exact for any backlog: the deliveries waiting plus the stream
-- messages not taken yet, from the counters (the matching deltas less base
-- and taken: a sum over a few rows per key), or row by row for the
-- consumers mio.consumer_counts_rows names. oldest_pending_age: the oldest
-- waiting delivery, or the first message not taken yet. Inline, not in
-- functions: inlined, mio.log_ready's LIMIT 1 is a constant the planner sees
-- (one index probe per consumer).
--
-- security_invoker: the caller's row-level security applies.

CREATE VIEW mio.queue_health WITH (security_invoker = true) AS
SELECT 'consumer'::text AS kind, c.tenant_id, c.name AS consumer, NULL::text AS queue,
       d.pending + u.untaken AS pending, d.ack_pending + l.leased AS ack_pending, d.redelivered, d.dead,
       coalesce(now() - least(d.oldest_pending, o.next_untaken_at), interval '0') AS oldest_pending_age,
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
    -- Outstanding lease-range members: ranges above the
    -- consumer's sweep, less the members their settle rows name.
    SELECT coalesce(sum(cardinality(r.message_ids) - coalesce((
               SELECT sum(cardinality(s.idxs)) FROM mio.consumer_settles AS s
               WHERE s.tenant_id = r.tenant_id AND s.consumer_name = r.consumer_name AND s.lease_id = r.id), 0)), 0)::bigint AS leased
    FROM mio.consumer_leases AS r
    WHERE r.tenant_id = c.tenant_id AND r.consumer_name = c.name AND r.id > c.swept
) AS l
CROSS JOIN LATERAL (
    SELECT CASE WHEN mio.consumer_counts_rows(c.filter_conversation_ids, c.start_time, c.created_at)
                THEN mio.consumer_untaken_rows(c.tenant_id, c.stage, c.log_lo, c.log_hi, c.cursor_xid, c.cursor_seq,
                                               c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time)
                ELSE (SELECT coalesce(sum(k.n), 0) FROM mio.stream_counts AS k
                      WHERE k.tenant_id = c.tenant_id AND k.stage = c.stage
                        AND (cardinality(coalesce(c.filter_channel_types, '{}')) = 0 OR k.channel_type = ANY (c.filter_channel_types))
                        AND (cardinality(coalesce(c.filter_account_ids, '{}')) = 0 OR k.account_id = ANY (c.filter_account_ids)))
                     - c.backlog_base - c.taken
           END::bigint AS untaken
) AS u
CROSS JOIN LATERAL (
    SELECT min(f.received_at) AS next_untaken_at
    FROM (
        (SELECT i.received_at
         FROM mio.log_ready(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                            coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'),
                            coalesce(c.filter_conversation_ids, '{}'), c.start_time, 1) AS i
         WHERE u.untaken > 0 AND c.stage = 'ready')
        UNION ALL
        (SELECT i.received_at
         FROM mio.log_ready(c.tenant_id, c.log_hi, pg_current_snapshot(), '0', 0,
                            coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'),
                            coalesce(c.filter_conversation_ids, '{}'), c.start_time, 1) AS i
         WHERE u.untaken > 0 AND c.stage = 'ready' AND c.log_hi IS NOT NULL)
        UNION ALL
        (SELECT i.received_at
         FROM mio.log_received(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                               coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'),
                               coalesce(c.filter_conversation_ids, '{}'), c.start_time, 1) AS i
         WHERE u.untaken > 0 AND c.stage = 'received')
        UNION ALL
        (SELECT i.received_at
         FROM mio.log_received(c.tenant_id, c.log_hi, pg_current_snapshot(), '0', 0,
                               coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'),
                               coalesce(c.filter_conversation_ids, '{}'), c.start_time, 1) AS i
         WHERE u.untaken > 0 AND c.stage = 'received' AND c.log_hi IS NOT NULL)
    ) AS f
) AS o
UNION ALL
SELECT 'river_queue'::text AS kind, NULL::uuid AS tenant_id, NULL::text AS consumer, q.queue,
       NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::interval, NULL::timestamptz,
       q.available, q.running, q.retryable, q.oldest_available_age
FROM mio.river_queue_depth() AS q;

GRANT SELECT ON mio.queue_health TO mio_runtime;
