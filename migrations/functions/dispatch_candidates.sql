-- The outbox rows of p_ids that can be sent now (queued and due, or sending
-- with an expired lease) and are first of their lane, with what the
-- dispatcher needs to rate-limit them: their account's status and limits.
--
-- plpgsql with planner settings: its plans must not depend on statistics
-- (docs/architecture.md, "Planner safety").

CREATE OR REPLACE FUNCTION mio.dispatch_candidates(p_tenant uuid, p_ids uuid[]) RETURNS TABLE(id uuid, account_id uuid, channel_type text, conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid, handoff_state text, attempt_no integer, series_first_attempt integer, attempts integer, created_at timestamp with time zone, provider_state text, account_status text, rate_limit_per_sec double precision, rate_limit_burst integer, max_attempts integer, edit_provider_message_id text)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_sort TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    -- The rows that can be sent now — queued and due, or sending with an
    -- expired lease (resumed with the same attempt number) — and first of
    -- their (account, conversation) lane, locked in id order; a row
    -- another transaction holds is skipped (its holder sends it). With
    -- their account's limits and the provider id of the message an edit
    -- refers to; in lane order (seq), the order tokens are taken in.
    RETURN QUERY
    SELECT r.id, r.account_id, r.channel_type, r.conversation_id, r.thread_id, r.text, r.rich_content,
           r.attachments, r.edit_of, r.handoff_state, r.attempt_no, r.series_first_attempt, r.attempts,
           r.created_at, r.provider_state, r.status, r.rate_limit_per_sec, r.rate_limit_burst, r.max_attempts,
           CASE WHEN r.edit_of IS NULL THEN NULL
                ELSE (SELECT CASE WHEN e.id = r.edit_of THEN e.provider_message_id END
                      FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                            WHERE y.tenant_id = p_tenant AND y.id >= r.edit_of
                            ORDER BY y.id LIMIT 1) AS e) END
    FROM (SELECT DISTINCT u.id FROM unnest(p_ids) AS u(id) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.ctid AS tid FROM mio.outbox AS x
        WHERE x.tenant_id = p_tenant AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS at
    CROSS JOIN LATERAL (
        SELECT o.id, o.seq, o.account_id, o.channel_type, o.conversation_id, o.thread_id, o.text, o.rich_content,
               o.attachments, o.edit_of, o.handoff_state, o.attempt_no, o.series_first_attempt, o.attempts,
               o.created_at, o.provider_state, a.status, a.rate_limit_per_sec, a.rate_limit_burst, a.max_attempts
        FROM mio.outbox AS o
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        WHERE o.ctid = at.tid AND o.tenant_id = p_tenant AND o.id = i.id
          AND ((o.handoff_state = 'queued' AND o.next_attempt_at <= now())
               OR (o.handoff_state = 'sending' AND o.lease_until <= now()))
          AND (SELECT 1 FROM mio.outbox AS p
               WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                 AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
               ORDER BY p.seq LIMIT 1) IS NULL
        FOR NO KEY UPDATE OF o SKIP LOCKED
    ) AS r
    ORDER BY r.seq;
END
$$;
