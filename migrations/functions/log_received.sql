-- As mio.log_ready, for the received stage (insert xid, insert seq).
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.log_received(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer) RETURNS SETOF mio.inbox
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT i.* FROM mio.inbox AS i
         WHERE i.tenant_id = p_tenant
           AND i.xid = x.xid
           AND (i.xid, i.seq) > (p_after_xid, p_after_seq)
           AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
           AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
           AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
           AND (p_start_time IS NULL OR i.received_at >= p_start_time)
         ORDER BY i.seq
         LIMIT p_max
     ) AS e
     ORDER BY e.xid, e.seq
     LIMIT p_max)
    UNION ALL
    (SELECT i.* FROM mio.inbox AS i
     WHERE i.tenant_id = p_tenant
       AND (i.xid, i.seq) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                                  CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND i.xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(i.xid, p_hi)
       AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
       AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
       AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
       AND (p_start_time IS NULL OR i.received_at >= p_start_time)
     ORDER BY i.xid, i.seq
     LIMIT p_max)
) AS w
ORDER BY w.xid, w.seq
LIMIT p_max
$$;
