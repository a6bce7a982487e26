-- Records the outcome of sends (p_ids at p_attempt_nos): handed off,
-- retried after a delay, or dead; moves the provider state forward, sets
-- receipt deadlines, appends the events. Returns the new states.
--
-- plpgsql with planner settings: rows found by primary key, updated by TID
-- (docs/architecture.md, "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_finish(p_tenant uuid, p_ids uuid[], p_attempt_nos integer[], p_outcomes text[], p_provider_message_ids text[], p_errors text[], p_delays_ms bigint[], p_receipt_timeouts_ms bigint[], p_details text[], p_accepts boolean[]) RETURNS TABLE(id uuid, attempt_no integer, handoff_state text, outcome text)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_indexscan TO 'on'
    AS $$
#variable_conflict use_column
DECLARE
    ks        integer[] := '{}';
    tids      tid[] := '{}';
    more_ks   integer[];
    more_tids tid[];
BEGIN
    -- 1. Lock each row still sending the attempt, found by primary key
    --    (the positional probe), in id order (concurrent lockers of the
    --    same rows queue, never deadlock). A row that is no longer sending
    --    the attempt is left alone: its attempt moved on.
    --
    --    A sending row can still be updated by another transaction while
    --    this one waits for its lock: the outbox sweeper gives a row whose
    --    lease had ended a new job just as a resumed send of it starts. The
    --    lock then takes the row's new version, whose TID is not the one
    --    probed, and the TID test drops the row. So when a pass leaves rows
    --    out, those still sending their attempt are locked in another
    --    pass: an outcome is never dropped for a version change (the send
    --    would be made again after the lease).
    LOOP
        SELECT array_agg(i.k), array_agg(r.tid) INTO more_ks, more_tids
        FROM (SELECT u.id, u.k::integer AS k FROM unnest(p_ids) WITH ORDINALITY AS u(id, k)
              WHERE u.k <> ALL (ks)
              ORDER BY u.id OFFSET 0) AS i
        CROSS JOIN LATERAL (
            SELECT x.ctid AS tid FROM mio.outbox AS x
            WHERE x.tenant_id = p_tenant AND x.id >= i.id
            ORDER BY x.id
            LIMIT 1
        ) AS at
        CROSS JOIN LATERAL (
            SELECT o.ctid AS tid FROM mio.outbox AS o
            WHERE o.ctid = at.tid AND o.tenant_id = p_tenant AND o.id = i.id
              AND o.handoff_state = 'sending' AND o.attempt_no = p_attempt_nos[i.k]
            FOR NO KEY UPDATE
        ) AS r;
        ks := ks || coalesce(more_ks, '{}');
        tids := tids || coalesce(more_tids, '{}');
        EXIT WHEN cardinality(ks) = cardinality(p_ids);
        EXIT WHEN NOT EXISTS (
            SELECT FROM unnest(p_ids, p_attempt_nos) WITH ORDINALITY AS u(id, attempt_no, k)
            CROSS JOIN LATERAL (
                SELECT x.id, x.handoff_state, x.attempt_no FROM mio.outbox AS x
                WHERE x.tenant_id = p_tenant AND x.id >= u.id
                ORDER BY x.id
                LIMIT 1
            ) AS at
            WHERE u.k <> ALL (ks) AND at.id = u.id AND at.handoff_state = 'sending' AND at.attempt_no = u.attempt_no);
    END LOOP;
    IF cardinality(ks) = 0 THEN
        RETURN;
    END IF;

    -- 2. Record the outcomes on the locked versions.
    PERFORM set_config('enable_indexscan', 'off', true);
    RETURN QUERY
    WITH input AS (
        SELECT x.tid, p_outcomes[x.k] AS outcome, p_provider_message_ids[x.k] AS provider_message_id,
               p_errors[x.k] AS error, p_delays_ms[x.k] AS delay_ms,
               p_receipt_timeouts_ms[x.k] AS receipt_timeout_ms, p_details[x.k] AS detail,
               p_accepts[x.k] AS accept
        FROM unnest(ks, tids) AS x(k, tid)
    ),
    upd AS (
        UPDATE mio.outbox AS o
        SET handoff_state = CASE input.outcome WHEN 'handed_off' THEN 'handed_off' WHEN 'dead' THEN 'dead'
                                               WHEN 'retry' THEN 'queued' ELSE o.handoff_state END,
            attempt_no = o.attempt_no + CASE WHEN input.outcome = 'retry' THEN 1 ELSE 0 END,
            next_attempt_at = CASE WHEN input.outcome IN ('retry', 'rate_limited')
                                   THEN now() + input.delay_ms * interval '1 millisecond' ELSE o.next_attempt_at END,
            lease_until = CASE WHEN input.outcome = 'rate_limited'
                               THEN now() + input.delay_ms * interval '1 millisecond' END,
            provider_message_id = CASE WHEN input.outcome = 'handed_off' THEN nullif(input.provider_message_id, '')
                                       ELSE o.provider_message_id END,
            provider_state = CASE WHEN input.outcome = 'handed_off' AND mio.provider_rank(o.provider_state) < 10
                                  THEN 'accepted' ELSE o.provider_state END,
            last_error = CASE WHEN input.error <> '' THEN input.error ELSE o.last_error END,
            handed_off_at = CASE WHEN input.outcome = 'handed_off' THEN now() ELSE o.handed_off_at END,
            dead_at = CASE WHEN input.outcome = 'dead' THEN now() ELSE o.dead_at END,
            receipt_due_at = CASE WHEN input.outcome = 'handed_off' AND input.receipt_timeout_ms > 0
                                  THEN now() + input.receipt_timeout_ms * interval '1 millisecond'
                                  ELSE o.receipt_due_at END,
            receipts = o.receipts OR (input.outcome = 'handed_off' AND input.receipt_timeout_ms > 0),
            updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant
        RETURNING o.id, o.attempt_no, o.handoff_state, o.provider_state, input.outcome, input.detail, input.accept
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
        SELECT p_tenant, upd.id, upd.outcome, 'handoff', upd.handoff_state, upd.attempt_no,
               nullif(upd.detail, '')::jsonb
        FROM upd
        UNION ALL
        SELECT p_tenant, upd.id, 'accepted', 'provider', upd.provider_state, upd.attempt_no, NULL
        FROM upd
        WHERE upd.outcome = 'handed_off' AND upd.accept
    )
    SELECT upd.id, upd.attempt_no, upd.handoff_state, upd.outcome FROM upd;
END
$$;
