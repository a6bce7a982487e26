-- Ordered lanes hand on (issue 15): a dispatch job that hands a lane's
-- message off claims the lane's next message in the same run, instead of
-- that message's own job finding out later by polling.

-- +goose Up
-- mio.dispatch_claim_next hands ordered lanes on: for each lane k
-- (p_account_ids[k], p_conversation_ids[k]) whose message a dispatch job
-- is recording the outcome of (called after that outcome, in the same
-- transaction), it looks at the lane's first active row. When that row is
-- queued and due, of a channel in p_unlimited and an account without its
-- own rate limit, and p_claim[k] is set, it is claimed for the running job
-- p_job_ids[k] at once: moved to sending under a lease of p_lease_seconds
-- with its event, recorded as owned by that job, its own job deleted
-- unless River is running it (a running one finds the row taken);
-- claimed = true. When the row is queued and due but cannot be claimed
-- here (p_claim[k] false: the job is out of budget; or the row needs a
-- rate-limit token) it is returned with claimed = false, for the caller to
-- give it a job that runs now. With p_adopt[k] (the job starts draining
-- the lane) the job also adopts the queued rows behind (below). All lanes
-- are handled set-wise, a few statements whatever their number. A lane that is empty, whose first row is in
-- flight, locked by another claim, or waiting for its next attempt (as the
-- message just recorded is when it was not handed off but retried or
-- rate-limited) returns nothing: whoever holds that row moves the lane on. Rows
-- behind the first are never touched, so order within the lane is the
-- claim order of mio.outbox_lane. (plpgsql: River's tables are created
-- after these migrations.)
-- +goose StatementBegin
CREATE FUNCTION mio.dispatch_claim_next(p_tenant uuid, p_job_ids bigint[], p_account_ids uuid[],
                                        p_conversation_ids text[], p_claim boolean[], p_adopt boolean[],
                                        p_unlimited text[], p_lease_seconds double precision)
    RETURNS TABLE (lane integer, claimed boolean, id uuid, account_id uuid, channel_type text,
                   conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb,
                   edit_of uuid, attempt_no integer, series_first_attempt integer, attempts integer,
                   created_at timestamptz, provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    SET jit = off
    AS $$
#variable_conflict use_column
DECLARE
    ks    integer[];
    ids   uuid[];
    seqs  bigint[];
    jobs  bigint[];
BEGIN
    -- Lanes whose first active row is due but not to be claimed here.
    RETURN QUERY
    SELECT l.k::integer, false, h.id, h.account_id, NULL::text, l.conv, NULL::text, NULL::text, NULL::jsonb,
           NULL::jsonb, NULL::uuid, NULL::integer, NULL::integer, NULL::integer, NULL::timestamptz, NULL::text,
           NULL::text
    FROM unnest(p_account_ids, p_conversation_ids) WITH ORDINALITY AS l(acc, conv, k)
    CROSS JOIN LATERAL (
        SELECT o.id, o.account_id, o.handoff_state, o.next_attempt_at,
               o.channel_type = ANY (p_unlimited) AND a.rate_limit_per_sec IS NULL
                   AND a.rate_limit_burst IS NULL AS fast
        FROM mio.outbox AS o
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        WHERE o.tenant_id = p_tenant AND o.account_id = l.acc AND o.conversation_id = l.conv AND o.active
        ORDER BY o.seq
        LIMIT 1
    ) AS h
    WHERE h.handoff_state = 'queued' AND h.next_attempt_at <= now() AND NOT (p_claim[l.k] AND h.fast);

    -- The others' first rows, locked and re-checked on their newest
    -- version; a row another claim holds is that claim's to send. No lower
    -- seq can become active again (resends and requeues draw a new seq):
    -- still queued means still first.
    SELECT array_agg(c.k), array_agg(c.id), array_agg(c.seq), array_agg(c.job_id)
    INTO ks, ids, seqs, jobs
    FROM (
        SELECT l.k::integer AS k, o.id, o.seq, o.job_id
        FROM unnest(p_account_ids, p_conversation_ids) WITH ORDINALITY AS l(acc, conv, k)
        CROSS JOIN LATERAL (
            SELECT f.id FROM mio.outbox AS f
            WHERE f.tenant_id = p_tenant AND f.account_id = l.acc AND f.conversation_id = l.conv AND f.active
            ORDER BY f.seq
            LIMIT 1
        ) AS h
        JOIN mio.outbox AS o ON o.tenant_id = p_tenant AND o.id = h.id
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        WHERE p_claim[l.k] AND o.handoff_state = 'queued' AND o.next_attempt_at <= now()
          AND o.channel_type = ANY (p_unlimited) AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL
        FOR NO KEY UPDATE OF o SKIP LOCKED
    ) AS c;
    IF ids IS NULL THEN
        RETURN;
    END IF;

    -- Their own jobs go, unless River is running them.
    DELETE FROM river.river_job AS j
    WHERE j.id IN (SELECT jj.id FROM river.river_job AS jj
                   WHERE jj.id = ANY (jobs) AND jj.state IN ('available', 'scheduled', 'retryable')
                   FOR UPDATE SKIP LOCKED);

    -- A job that starts draining a lane adopts the queued rows behind:
    -- their jobs, not started, are deleted (River would only run them to
    -- find the lane busy), and the job is recorded as theirs, as it is for
    -- rows whose job is gone or finished (an earlier job's hand-on).
    WITH behind AS (
        SELECT b.id, b.job_id, p_job_ids[c.k] AS owner
        FROM unnest(ks, seqs) AS c(k, seq)
        CROSS JOIN LATERAL (
            SELECT o.id, o.job_id FROM mio.outbox AS o
            WHERE o.tenant_id = p_tenant AND o.account_id = p_account_ids[c.k]
              AND o.conversation_id = p_conversation_ids[c.k] AND o.active AND o.seq > c.seq
              AND o.handoff_state = 'queued' AND o.job_id IS DISTINCT FROM p_job_ids[c.k]
            ORDER BY o.seq
            LIMIT 1000
        ) AS b
        WHERE p_adopt[c.k]
    ),
    gone AS (
        DELETE FROM river.river_job AS j
        WHERE j.id IN (SELECT jj.id FROM river.river_job AS jj JOIN behind ON jj.id = behind.job_id
                       WHERE jj.state IN ('available', 'scheduled', 'retryable')
                       FOR UPDATE OF jj SKIP LOCKED)
        RETURNING j.id
    )
    UPDATE mio.outbox AS o SET job_id = behind.owner
    FROM behind
    LEFT JOIN river.river_job AS j ON j.id = behind.job_id
    WHERE o.tenant_id = p_tenant AND o.id = behind.id
      AND (behind.job_id IS NULL OR behind.job_id IN (SELECT gone.id FROM gone) OR j.id IS NULL
           OR j.state IN ('completed', 'cancelled', 'discarded'));

    RETURN QUERY
    WITH input AS (
        SELECT c.k, c.id FROM unnest(ks, ids) AS c(k, id)
    ),
    upd AS (
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = p_job_ids[input.k],
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.tenant_id = p_tenant AND o.id = ANY (ids) AND o.id = input.id
        RETURNING input.k AS lane_k, o.*
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, 'sending', 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.lane_k, true, upd.id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id,
           upd.text, upd.rich_content, upd.attachments, upd.edit_of, upd.attempt_no,
           upd.series_first_attempt, upd.attempts, upd.created_at, upd.provider_state,
           coalesce((SELECT orig.provider_message_id FROM mio.outbox AS orig
                     WHERE orig.tenant_id = p_tenant AND orig.id = upd.edit_of), '')
    FROM upd;
END
$$;
-- +goose StatementEnd


-- +goose Down
DROP FUNCTION IF EXISTS mio.dispatch_claim_next(uuid, bigint[], uuid[], text[], boolean[], boolean[], text[], double precision);
