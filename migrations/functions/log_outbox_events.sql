-- As mio.log_received, for mio.outbox_events in (xid, id) order.
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.log_outbox_events(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint, p_max integer) RETURNS SETOF mio.outbox_events
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT o.* FROM mio.outbox_events AS o
         WHERE o.tenant_id = p_tenant
           AND o.xid = x.xid
           AND (o.xid, o.id) > (p_after_xid, p_after_seq)
         ORDER BY o.id
         LIMIT p_max
     ) AS e
     ORDER BY e.xid, e.id
     LIMIT p_max)
    UNION ALL
    (SELECT o.* FROM mio.outbox_events AS o
     WHERE o.tenant_id = p_tenant
       AND (o.xid, o.id) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                            CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND o.xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(o.xid, p_hi)
     ORDER BY o.xid, o.id
     LIMIT p_max)
) AS w
ORDER BY w.xid, w.id
LIMIT p_max
$$;
