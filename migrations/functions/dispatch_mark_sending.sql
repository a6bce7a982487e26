-- Moves claimed rows to sending (or records p_events such as rate_limited
-- on them) and renews their lease. Returns the attempt each row is on.
--
-- plpgsql with planner settings: rows found by primary key, updated by TID
-- (docs/architecture.md, "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_mark_sending(p_tenant uuid, p_ids uuid[], p_events text[], p_counts integer[], p_lease_seconds double precision) RETURNS TABLE(id uuid, attempt_no integer, attempts integer)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_indexscan TO 'on'
    AS $$
#variable_conflict use_column
DECLARE
    ks   integer[];
    tids tid[];
BEGIN
    -- 1. The rows, found by primary key and locked in id order (the
    --    candidates' transaction holds them already), if still queued or
    --    sending.
    SELECT array_agg(i.k), array_agg(r.tid) INTO ks, tids
    FROM (SELECT u.id, u.k::integer AS k FROM unnest(p_ids) WITH ORDINALITY AS u(id, k) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.ctid AS tid FROM mio.outbox AS x
        WHERE x.tenant_id = p_tenant AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS at
    CROSS JOIN LATERAL (
        SELECT o.ctid AS tid FROM mio.outbox AS o
        WHERE o.ctid = at.tid AND o.tenant_id = p_tenant AND o.id = i.id
          AND o.handoff_state IN ('queued', 'sending')
        FOR NO KEY UPDATE
    ) AS r;
    IF ks IS NULL THEN
        RETURN;
    END IF;

    -- 2. Sending under a lease, on the locked versions, with their events
    --    ('sending', or 'resumed' for an attempt taken over after its
    --    lease expired; counts says whether the row starts an attempt).
    PERFORM set_config('enable_indexscan', 'off', true);
    RETURN QUERY
    WITH input AS (
        SELECT x.tid, p_events[x.k] AS event, p_counts[x.k] AS count
        FROM unnest(ks, tids) AS x(k, tid)
    ),
    upd AS (
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + input.count,
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant
        RETURNING o.id, o.attempt_no, o.attempts, input.event
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, upd.event, 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.id, upd.attempt_no, upd.attempts FROM upd;
END
$$;
