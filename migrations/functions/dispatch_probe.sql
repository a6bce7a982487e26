-- Why rows of p_ids were not claimed: their state, when they are due, and
-- the state of the first active row ahead of them in their lane.
--
-- plpgsql with planner settings (docs/architecture.md, "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_probe(p_tenant uuid, p_ids uuid[]) RETURNS TABLE(id uuid, account_id uuid, conversation_id text, handoff_state text, next_attempt_at timestamp with time zone, lease_until timestamp with time zone, blocker_state text, blocker_next_attempt_at timestamp with time zone, blocker_lease_until timestamp with time zone)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_sort TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    -- Why rows were not claimed: their state, when they are due, and the
    -- state of the first active row ahead of them in their lane. Rows that
    -- do not exist are absent.
    RETURN QUERY
    SELECT o.id, o.account_id, o.conversation_id, o.handoff_state, o.next_attempt_at, o.lease_until,
           coalesce(b.handoff_state, ''), coalesce(b.next_attempt_at, o.next_attempt_at), b.lease_until
    FROM (SELECT DISTINCT u.id FROM unnest(p_ids) AS u(id) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.id, x.seq, x.account_id, x.conversation_id, x.handoff_state, x.next_attempt_at, x.lease_until
        FROM mio.outbox AS x
        WHERE x.tenant_id = p_tenant AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS o
    LEFT JOIN LATERAL (
        SELECT p.handoff_state, p.next_attempt_at, p.lease_until
        FROM mio.outbox AS p
        WHERE p.tenant_id = p_tenant AND p.account_id = o.account_id
          AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
        ORDER BY p.seq
        LIMIT 1
    ) AS b ON true
    WHERE o.id = i.id;
END
$$;
