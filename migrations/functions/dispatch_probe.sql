-- Why rows of p_ids were not claimed: their state, when they are due, and
-- the state of the first active row ahead of them in their lane.
--
-- plpgsql: one statement whose plan does not depend on the values or the
-- statistics, without planner settings: the tenant and the ids are read
-- through sub-selects, so a custom plan costs what the generic one does
-- and plpgsql keeps the generic one; each row is found by the primary
-- key's order, and whether a row is ahead of it by outbox_lane's order
-- alone, in the index (docs/architecture.md, "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_probe(p_tenant uuid, p_ids uuid[]) RETURNS TABLE(id uuid, account_id uuid, conversation_id text, handoff_state text, next_attempt_at timestamp with time zone, lease_until timestamp with time zone, blocker_state text, blocker_next_attempt_at timestamp with time zone, blocker_lease_until timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
    -- Why rows were not claimed: their state, when they are due, and the
    -- state of the first active row ahead of them in their lane. Rows that
    -- do not exist are absent. Whether an active row is ahead reads only
    -- outbox_lane's columns (an index-only scan, which costs less than a
    -- bitmap scan and a sort for the lane's few rows); that row, the lane's
    -- head, is read only when there is one.
    RETURN QUERY
    SELECT o.id, o.account_id, o.conversation_id, o.handoff_state, o.next_attempt_at, o.lease_until,
           coalesce(b.handoff_state, ''), coalesce(b.next_attempt_at, o.next_attempt_at), b.lease_until
    FROM (SELECT DISTINCT u.id FROM unnest((SELECT p_ids)) AS u(id) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.id, x.seq, x.account_id, x.conversation_id, x.handoff_state, x.next_attempt_at, x.lease_until
        FROM mio.outbox AS x
        WHERE x.tenant_id = (SELECT p_tenant) AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS o
    LEFT JOIN LATERAL (
        SELECT p.seq FROM mio.outbox AS p
        WHERE p.tenant_id = (SELECT p_tenant) AND p.account_id = o.account_id
          AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
        ORDER BY p.seq
        LIMIT 1
    ) AS a ON true
    LEFT JOIN LATERAL (
        SELECT h.handoff_state, h.next_attempt_at, h.lease_until FROM mio.outbox AS h
        WHERE a.seq IS NOT NULL AND h.tenant_id = (SELECT p_tenant) AND h.account_id = o.account_id
          AND h.conversation_id = o.conversation_id AND h.active
        ORDER BY h.seq
        LIMIT 1
    ) AS b ON true
    WHERE o.id = i.id;
END
$$;
