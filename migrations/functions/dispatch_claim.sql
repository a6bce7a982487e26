-- Claims the outbox rows of p_ids for one attempt each: rows found by
-- primary key and locked in id order, then moved to sending with a lease of
-- p_lease_seconds, their events appended. Returns the claimed rows.
--
-- plpgsql with planner settings: two steps, each with one possible plan
-- (docs/architecture.md, "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_claim(p_tenant uuid, p_ids uuid[], p_lease_seconds double precision) RETURNS TABLE(id uuid, account_id uuid, channel_type text, conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid, prior_state text, attempt_no integer, series_first_attempt integer, attempts integer, created_at timestamp with time zone, provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_indexscan TO 'on'
    AS $$
#variable_conflict use_column
DECLARE
    tids   tid[];
    states text[];
    edits  text[];
BEGIN
    -- 1. Lock each row that can be sent now — queued and due, or sending
    --    with an expired lease (resumed with the same attempt number) — by
    --    primary key, in id order; a row another transaction holds is
    --    waited for, then re-checked. Only rows first of their (account,
    --    conversation) lane are locked: a lane's hand-on
    --    (mio.dispatch_claim_next) takes a locked row to be another
    --    claim's. With the provider id of the message an edit refers to.
    SELECT array_agg(r.tid), array_agg(r.handoff_state),
           array_agg(CASE WHEN r.edit_of IS NULL THEN ''
                          ELSE coalesce((SELECT CASE WHEN e.id = r.edit_of THEN e.provider_message_id END
                                         FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                                               WHERE y.tenant_id = p_tenant AND y.id >= r.edit_of
                                               ORDER BY y.id LIMIT 1) AS e), '') END)
    INTO tids, states, edits
    FROM (SELECT DISTINCT u.id FROM unnest(p_ids) AS u(id) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.ctid AS tid FROM mio.outbox AS x
        WHERE x.tenant_id = p_tenant AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS at
    CROSS JOIN LATERAL (
        SELECT o.ctid AS tid, o.handoff_state, o.edit_of FROM mio.outbox AS o
        WHERE o.ctid = at.tid AND o.tenant_id = p_tenant AND o.id = i.id
          AND ((o.handoff_state = 'queued' AND o.next_attempt_at <= now())
               OR (o.handoff_state = 'sending' AND o.lease_until <= now()))
          AND (SELECT 1 FROM mio.outbox AS p
               WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                 AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
               ORDER BY p.seq LIMIT 1) IS NULL
        FOR NO KEY UPDATE
    ) AS r;
    IF tids IS NULL THEN
        RETURN;
    END IF;

    -- 2. Claim them on the locked versions, with their events. (Nothing
    --    in this statement may need an index: with index scans off, a
    --    sub-plan that did would be costed as disabled on every row and
    --    make a scan of the tenant look cheaper than the TID scans.)
    PERFORM set_config('enable_indexscan', 'off', true);
    RETURN QUERY
    WITH upd AS (
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending',
            attempts = o.attempts + CASE WHEN o.handoff_state = 'queued' THEN 1 ELSE 0 END,
            lease_until = now() + make_interval(secs => p_lease_seconds),
            updated_at = now()
        FROM unnest(tids, states, edits) AS x(tid, prior_state, edit_provider_message_id)
        WHERE o.ctid = x.tid AND o.tenant_id = p_tenant
        RETURNING o.id, o.seq, o.account_id, o.channel_type, o.conversation_id, o.thread_id, o.text, o.rich_content,
                  o.attachments, o.edit_of, x.prior_state, o.attempt_no, o.series_first_attempt, o.attempts,
                  o.created_at, o.provider_state, x.edit_provider_message_id
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, CASE WHEN upd.prior_state = 'queued' THEN 'sending' ELSE 'resumed' END,
               'handoff', 'sending', upd.attempt_no
        FROM upd
    )
    SELECT upd.id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id, upd.text,
           upd.rich_content, upd.attachments, upd.edit_of, upd.prior_state, upd.attempt_no,
           upd.series_first_attempt, upd.attempts, upd.created_at, upd.provider_state, upd.edit_provider_message_id
    FROM upd
    ORDER BY upd.seq;
END
$$;
