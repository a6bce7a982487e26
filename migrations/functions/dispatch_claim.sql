-- Claims the outbox rows of p_ids for one attempt each: rows found by
-- primary key and locked in id order, then moved to sending with a lease of
-- p_lease_seconds, their events appended. Returns the claimed rows.
--
-- plpgsql: two steps, each planned for the outbox as it is now (dynamic
-- statements: docs/architecture.md, "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_claim(p_tenant uuid, p_ids uuid[], p_lease_seconds double precision) RETURNS TABLE(id uuid, account_id uuid, channel_type text, conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid, prior_state text, attempt_no integer, series_first_attempt integer, attempts integer, created_at timestamp with time zone, provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    c      refcursor;
    st     text;
    ed     text;
    r      mio.outbox;
    claimed mio.outbox[] := '{}';
    states text[] := '{}';
    edits  text[] := '{}';
BEGIN
    -- 1. Lock each row that can be sent now — queued and due, or sending
    --    with an expired lease (resumed with the same attempt number) — by
    --    primary key, in id order; a row another transaction holds is
    --    waited for, then re-checked. Only rows first of their (account,
    --    conversation) lane are locked: a lane's hand-on
    --    (mio.dispatch_claim_next) takes a locked row to be another
    --    claim's. With the provider id of the message an edit refers to.
    OPEN c NO SCROLL FOR EXECUTE $q$
    SELECT r.handoff_state,
           CASE WHEN r.edit_of IS NULL THEN ''
                ELSE coalesce((SELECT CASE WHEN e.id = r.edit_of THEN e.provider_message_id END
                               FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                                     WHERE y.tenant_id = $1 AND y.id >= r.edit_of
                                     ORDER BY y.id LIMIT 1) AS e), '') END
    FROM (SELECT DISTINCT u.id FROM unnest($2::uuid[]) AS u(id) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.ctid AS tid FROM mio.outbox AS x
        WHERE x.tenant_id = $1 AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS at
    CROSS JOIN LATERAL (
        SELECT o.handoff_state, o.edit_of FROM mio.outbox AS o
        WHERE o.ctid = at.tid AND o.id = i.id
          AND ((o.handoff_state = 'queued' AND o.next_attempt_at <= now())
               OR (o.handoff_state = 'sending' AND o.lease_until <= now()))
          AND (SELECT 1 FROM mio.outbox AS p
               WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                 AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
               ORDER BY p.seq LIMIT 1) IS NULL
        FOR NO KEY UPDATE
    ) AS r
    $q$ USING p_tenant, p_ids;

    -- 2. Claim each on its locked version (WHERE CURRENT OF: a TID scan,
    --    whatever the statistics say).
    LOOP
        FETCH c INTO st, ed;
        EXIT WHEN NOT FOUND;
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending',
            attempts = o.attempts + CASE WHEN o.handoff_state = 'queued' THEN 1 ELSE 0 END,
            lease_until = now() + make_interval(secs => p_lease_seconds),
            updated_at = now()
        WHERE CURRENT OF c
        RETURNING o.* INTO r;
        claimed := claimed || r;
        states := states || st;
        edits := edits || ed;
    END LOOP;
    CLOSE c;
    IF cardinality(claimed) = 0 THEN
        RETURN;
    END IF;

    -- 3. Their events; the rows, in lane order.
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
    SELECT p_tenant, u.id, CASE WHEN states[u.ordinality] = 'queued' THEN 'sending' ELSE 'resumed' END,
           'handoff', 'sending', u.attempt_no
    FROM unnest(claimed) WITH ORDINALITY AS u;
    RETURN QUERY
    SELECT u.id, u.account_id, u.channel_type, u.conversation_id, u.thread_id, u.text, u.rich_content,
           u.attachments, u.edit_of, states[u.ordinality], u.attempt_no, u.series_first_attempt, u.attempts,
           u.created_at, u.provider_state, edits[u.ordinality]
    FROM unnest(claimed) WITH ORDINALITY AS u
    ORDER BY u.seq;
END
$$;
