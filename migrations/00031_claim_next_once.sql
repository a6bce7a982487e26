-- +goose Up
-- mio.dispatch_claim_next (00017) finds each lane's first active row once
-- (issue 15, target 4). It looked twice — once to name the rows it would
-- not claim, once to lock the others, joined back to the outbox by id —
-- and on a bulk run, where every lane held one message, both found
-- nothing: 2,704 calls at 1.7 ms, 0 rows, a fifth of the dispatch run's
-- statement time (pg_stat_statements). On the statistics of a young
-- outbox the second look was also planned outbox-first: a scan of the
-- tenant's queued rows, each probed against every lane (47,520 probes,
-- 222 ms, auto_explain). Now: one LATERAL probe of outbox_lane per lane
-- into arrays, a return when no lane has a queued head, and the lock and
-- the claim by the version the probe saw (TID scans).
SET lock_timeout = '10s';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_claim_next(p_tenant uuid, p_job_ids bigint[], p_account_ids uuid[],
                                        p_conversation_ids text[], p_claim boolean[], p_adopt boolean[],
                                        p_unlimited text[], p_lease_seconds double precision)
    RETURNS TABLE (lane integer, claimed boolean, id uuid, account_id uuid, channel_type text,
                   conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb,
                   edit_of uuid, attempt_no integer, series_first_attempt integer, attempts integer,
                   created_at timestamptz, provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    -- Generic plans: every statement finds rows by lane index, TID or
    -- job id, so the plan does not depend on the values; custom plans
    -- were re-planned on every call (about 2 of 3.1 ms per call).
    SET jit = off SET plan_cache_mode = force_generic_plan
    AS $$
#variable_conflict use_column
DECLARE
    hks    integer[];
    hids   uuid[];
    haccs  uuid[];
    htids  tid[];
    hclaim boolean[];
    ks     integer[];
    ids    uuid[];
    seqs   bigint[];
    jobs   bigint[];
    tids   tid[];
BEGIN
    -- Each lane's first active row, when it is queued and due: one descent
    -- of outbox_lane per lane (a LATERAL with LIMIT is always the inner
    -- side of the loop over the lanes), and only one.
    SELECT array_agg(h.k), array_agg(h.id), array_agg(h.account_id), array_agg(h.tid), array_agg(h.claim)
    INTO hks, hids, haccs, htids, hclaim
    FROM unnest(p_account_ids, p_conversation_ids) WITH ORDINALITY AS l(acc, conv, k)
    CROSS JOIN LATERAL (
        SELECT l.k::integer AS k, o.id, o.account_id, o.ctid AS tid, o.handoff_state, o.next_attempt_at,
               p_claim[l.k] AND o.channel_type = ANY (p_unlimited)
                   AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL AS claim
        FROM mio.outbox AS o
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        WHERE o.tenant_id = p_tenant AND o.account_id = l.acc AND o.conversation_id = l.conv AND o.active
        ORDER BY o.seq
        LIMIT 1
    ) AS h
    WHERE h.handoff_state = 'queued' AND h.next_attempt_at <= now();
    IF hks IS NULL THEN
        RETURN; -- the common case of a bulk run: every lane held one message
    END IF;

    -- Those not to be claimed here are named.
    RETURN QUERY
    SELECT h.k, false, h.id, h.acc, NULL::text, p_conversation_ids[h.k], NULL::text, NULL::text, NULL::jsonb,
           NULL::jsonb, NULL::uuid, NULL::integer, NULL::integer, NULL::integer, NULL::timestamptz, NULL::text,
           NULL::text
    FROM unnest(hks, hids, haccs, hclaim) AS h(k, id, acc, claim)
    WHERE NOT h.claim;

    -- The others are locked and re-checked on their newest version; a row
    -- another claim holds is that claim's to send. No lower seq can become
    -- active again (resends and requeues draw a new seq): still queued
    -- means still first. Found by the version the probe saw (a TID scan:
    -- no estimate can turn it into a scan of the tenant's outbox); a row
    -- updated since is not found, and whoever updated it moves the lane
    -- on, as for a locked one.
    SELECT array_agg(h.k), array_agg(c.id), array_agg(c.seq), array_agg(c.job_id), array_agg(c.tid)
    INTO ks, ids, seqs, jobs, tids
    FROM unnest(hks, htids, hids, hclaim) AS h(k, tid, id, claim)
    CROSS JOIN LATERAL (
        SELECT o.id, o.seq, o.job_id, o.ctid AS tid FROM mio.outbox AS o
        WHERE o.ctid = h.tid AND o.tenant_id = p_tenant AND o.id = h.id
          AND o.handoff_state = 'queued' AND o.next_attempt_at <= now()
        FOR NO KEY UPDATE SKIP LOCKED
    ) AS c
    WHERE h.claim;
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
        SELECT c.k, c.id, c.tid FROM unnest(ks, ids, tids) AS c(k, id, tid)
    ),
    upd AS (
        -- The rows are locked: their versions stay the ones found.
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = p_job_ids[input.k],
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant AND o.id = input.id
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
SET lock_timeout = '10s';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_claim_next(p_tenant uuid, p_job_ids bigint[], p_account_ids uuid[],
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
