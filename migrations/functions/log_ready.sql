-- The next rows of a tenant's ready stage in the window (lo, hi] after
-- (after_xid, after_seq), matching a filter, in (ready_xid, ready_seq)
-- order. Index range scans: one per transaction that was running at lo
-- and has ended (equality on its xid: an index condition in generic plans
-- too, so the statement cache's plans stay good), and one over the xids
-- that started after lo (from pg_snapshot_xmax(lo)). Rows examined are the window's rows plus those of
-- transactions still running; a long-open transaction costs nothing. The
-- second scan's lower bound is ONE row comparison, max((xmax(lo), 0),
-- after) (sequences start at 1): given two lower bounds, the btree scan
-- starts at the row comparison and walks every older row of the tenant.
-- A set-returning SQL function that is STABLE and not STRICT: the planner
-- inlines it into the calling query (and row-level security applies).
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.log_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer) RETURNS SETOF mio.inbox
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT i.* FROM mio.inbox AS i
         WHERE i.tenant_id = p_tenant
           AND i.ready_xid = x.xid
           AND (i.ready_xid, i.ready_seq) > (p_after_xid, p_after_seq)
           AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
           AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
           AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
           AND (p_start_time IS NULL OR i.received_at >= p_start_time)
         ORDER BY i.ready_seq
         LIMIT p_max
     ) AS e
     ORDER BY e.ready_xid, e.ready_seq
     LIMIT p_max)
    UNION ALL
    (SELECT i.* FROM mio.inbox AS i
     WHERE i.tenant_id = p_tenant
       AND (i.ready_xid, i.ready_seq) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                                  CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND i.ready_xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(i.ready_xid, p_hi)
       AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
       AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
       AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
       AND (p_start_time IS NULL OR i.received_at >= p_start_time)
     ORDER BY i.ready_xid, i.ready_seq
     LIMIT p_max)
) AS w
ORDER BY w.ready_xid, w.ready_seq
LIMIT p_max
$$;
