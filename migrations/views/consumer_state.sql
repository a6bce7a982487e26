-- A consumer with its current position: the newest row of
-- mio.consumer_positions when there is one, else the columns of
-- mio.consumers (where the ring copies the newest row before retiring its
-- generation). What every reader of a consumer's position selects from.
--
-- security_invoker: the caller's row-level security applies.

CREATE VIEW mio.consumer_state WITH (security_invoker = true) AS
SELECT c.tenant_id, c.name, c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids,
       c.deliver_policy, c.start_time, c.ack_wait_ms, c.max_deliver, c.max_ack_pending, c.ordering, c.stage,
       coalesce(p.cursor_xid, c.cursor_xid) AS cursor_xid,
       coalesce(p.cursor_seq, c.cursor_seq) AS cursor_seq,
       coalesce(p.log_lo, c.log_lo) AS log_lo,
       CASE WHEN p.n IS NULL THEN c.log_hi ELSE p.log_hi END AS log_hi,
       coalesce(p.swept, c.swept) AS swept,
       coalesce(p.last_delivered_at, c.last_delivered_at) AS last_delivered_at,
       p.written_at AS position_written_at,
       c.created_at, c.updated_at,
       coalesce(p.taken, c.taken) AS taken,
       c.backlog_base
FROM mio.consumers AS c
LEFT JOIN LATERAL (
    SELECT q.n, q.cursor_xid, q.cursor_seq, q.log_lo, q.log_hi, q.swept, q.last_delivered_at, q.written_at, q.taken
    FROM mio.consumer_positions AS q
    WHERE q.tenant_id = c.tenant_id AND q.consumer_name = c.name
    ORDER BY q.n DESC
    LIMIT 1
) AS p ON true;

GRANT SELECT ON mio.consumer_state TO mio_runtime;
