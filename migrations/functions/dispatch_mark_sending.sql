-- Moves claimed rows to sending (or records p_events such as rate_limited
-- on them) and renews their lease. Returns the attempt each row is on.
--
-- plpgsql: rows found by primary key, updated by TID, each step planned
-- for the outbox as it is now (dynamic statements: docs/architecture.md,
-- "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_mark_sending(p_tenant uuid, p_ids uuid[], p_events text[], p_counts integer[], p_lease_seconds double precision) RETURNS TABLE(id uuid, attempt_no integer, attempts integer)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    c     refcursor;
    k     integer;
    ids   uuid[] := '{}';
    atts  integer[] := '{}';
    tries integer[] := '{}';
    ks    integer[] := '{}';
    v_id  uuid;
    v_att integer;
    v_n   integer;
BEGIN
    -- 1. The rows, found by primary key and locked in id order (the
    --    candidates' transaction holds them already), if still queued or
    --    sending.
    OPEN c NO SCROLL FOR EXECUTE $q$
    SELECT i.k
    FROM (SELECT u.id, u.k::integer AS k FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, k) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.ctid AS tid FROM mio.outbox AS x
        WHERE x.tenant_id = $1 AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS at
    CROSS JOIN LATERAL (
        SELECT o.ctid AS tid FROM mio.outbox AS o
        WHERE o.ctid = at.tid AND o.id = i.id
          AND o.handoff_state IN ('queued', 'sending')
        FOR NO KEY UPDATE
    ) AS r
    $q$ USING p_tenant, p_ids;

    -- 2. Sending under a lease, each on its locked version (WHERE CURRENT
    --    OF: a TID scan, whatever the statistics say), with their events
    --    ('sending', or 'resumed' for an attempt taken over after its
    --    lease expired; counts says whether the row starts an attempt).
    LOOP
        FETCH c INTO k;
        EXIT WHEN NOT FOUND;
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + p_counts[k],
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        WHERE CURRENT OF c
        RETURNING o.id, o.attempt_no, o.attempts INTO v_id, v_att, v_n;
        ids := ids || v_id;
        atts := atts || v_att;
        tries := tries || v_n;
        ks := ks || k;
    END LOOP;
    CLOSE c;
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
    SELECT p_tenant, u.id, p_events[u.k], 'handoff', 'sending', u.att FROM unnest(ids, atts, ks) AS u(id, att, k);
    RETURN QUERY SELECT u.id, u.att, u.n FROM unnest(ids, atts, tries) AS u(id, att, n);
END
$$;
