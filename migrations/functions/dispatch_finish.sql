-- Records the outcome of sends (p_ids at p_attempt_nos): handed off,
-- retried after a delay, or dead; moves the provider state forward, sets
-- receipt deadlines, appends the events. Returns the new states.
--
-- plpgsql: rows found by primary key, updated by TID, each step planned
-- for the outbox as it is now (dynamic statements: docs/architecture.md,
-- "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_finish(p_tenant uuid, p_ids uuid[], p_attempt_nos integer[], p_outcomes text[], p_provider_message_ids text[], p_errors text[], p_delays_ms bigint[], p_receipt_timeouts_ms bigint[], p_details text[], p_accepts boolean[]) RETURNS TABLE(id uuid, attempt_no integer, handoff_state text, outcome text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    c       refcursor;
    k       integer;
    ids     uuid[] := '{}';
    atts    integer[] := '{}';
    hstates text[] := '{}';
    pstates text[] := '{}';
    ks      integer[] := '{}';
    v_id    uuid;
    v_att   integer;
    v_h     text;
    v_p     text;
BEGIN
    -- 1. Lock each row still sending the attempt, found by primary key
    --    (the positional probe above), in id order (concurrent lockers of
    --    the same rows queue, never deadlock). A row is sending under this
    --    worker's lease: nothing else updates it meanwhile; if something
    --    did, the finish does not move it, as when its attempt moved on.
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
          AND o.handoff_state = 'sending' AND o.attempt_no = ($3::integer[])[i.k]
        FOR NO KEY UPDATE
    ) AS r
    $q$ USING p_tenant, p_ids, p_attempt_nos;

    -- 2. Record each outcome on the locked version (WHERE CURRENT OF: a
    --    TID scan, whatever the statistics say).
    LOOP
        FETCH c INTO k;
        EXIT WHEN NOT FOUND;
        UPDATE mio.outbox AS o
        SET handoff_state = CASE p_outcomes[k] WHEN 'handed_off' THEN 'handed_off' WHEN 'dead' THEN 'dead'
                                               WHEN 'retry' THEN 'queued' ELSE o.handoff_state END,
            attempt_no = o.attempt_no + CASE WHEN p_outcomes[k] = 'retry' THEN 1 ELSE 0 END,
            next_attempt_at = CASE WHEN p_outcomes[k] IN ('retry', 'rate_limited')
                                   THEN now() + p_delays_ms[k] * interval '1 millisecond' ELSE o.next_attempt_at END,
            lease_until = CASE WHEN p_outcomes[k] = 'rate_limited'
                               THEN now() + p_delays_ms[k] * interval '1 millisecond' END,
            provider_message_id = CASE WHEN p_outcomes[k] = 'handed_off' THEN nullif(p_provider_message_ids[k], '')
                                       ELSE o.provider_message_id END,
            provider_state = CASE WHEN p_outcomes[k] = 'handed_off' AND mio.provider_rank(o.provider_state) < 10
                                  THEN 'accepted' ELSE o.provider_state END,
            last_error = CASE WHEN p_errors[k] <> '' THEN p_errors[k] ELSE o.last_error END,
            handed_off_at = CASE WHEN p_outcomes[k] = 'handed_off' THEN now() ELSE o.handed_off_at END,
            dead_at = CASE WHEN p_outcomes[k] = 'dead' THEN now() ELSE o.dead_at END,
            receipt_due_at = CASE WHEN p_outcomes[k] = 'handed_off' AND p_receipt_timeouts_ms[k] > 0
                                  THEN now() + p_receipt_timeouts_ms[k] * interval '1 millisecond'
                                  ELSE o.receipt_due_at END,
            receipts = o.receipts OR (p_outcomes[k] = 'handed_off' AND p_receipt_timeouts_ms[k] > 0),
            updated_at = now()
        WHERE CURRENT OF c
        RETURNING o.id, o.attempt_no, o.handoff_state, o.provider_state INTO v_id, v_att, v_h, v_p;
        ids := ids || v_id;
        atts := atts || v_att;
        hstates := hstates || v_h;
        pstates := pstates || v_p;
        ks := ks || k;
    END LOOP;
    CLOSE c;
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;

    -- 3. Their events.
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT p_tenant, u.id, p_outcomes[u.k], 'handoff', u.h, u.att, nullif(p_details[u.k], '')::jsonb
    FROM unnest(ids, atts, hstates, ks) AS u(id, att, h, k)
    UNION ALL
    SELECT p_tenant, u.id, 'accepted', 'provider', u.p, u.att, NULL
    FROM unnest(ids, atts, pstates, ks) AS u(id, att, p, k)
    WHERE p_outcomes[u.k] = 'handed_off' AND p_accepts[u.k];
    RETURN QUERY SELECT u.id, u.att, u.h, p_outcomes[u.k] FROM unnest(ids, atts, hstates, ks) AS u(id, att, h, k);
END
$$;
