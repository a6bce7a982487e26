-- +goose Up
-- One River job per group of sends (issue 15, targets 1 and 4): the sends
-- of one account written together share a dispatch job, which names the
-- group's first row in outbox_id and the others in "more"
-- (jobs.DispatchArgs). The functions that take rows over from other jobs
-- delete those jobs; they now keep a job that names more rows, since it
-- still stands for the rows not taken (it runs and finds the taken ones
-- no longer queued). A lane's first hand-on adopts the rows behind from
-- such a job as from a finished one. Nothing else changes.
SET lock_timeout = '10s';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_claim_extras(p_tenant uuid, p_job_ids bigint[], p_counts integer[],
                                          p_unlimited text[], p_lease_seconds double precision)
    RETURNS TABLE (id uuid, job_id bigint, account_id uuid, channel_type text, conversation_id text,
                   thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid,
                   attempt_no integer, series_first_attempt integer, created_at timestamptz,
                   provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    -- Walk the due index from its newest end and stop at the limit: never
    -- collect and sort every due row (nor compile it). Generic plans:
    -- the walk is an index order, the rest lookups by TID and job id;
    -- custom plans were re-planned on every call.
    SET enable_sort = off SET enable_bitmapscan = off SET jit = off SET plan_cache_mode = force_generic_plan
    AS $$
#variable_conflict use_column
DECLARE
    owners bigint[] := '{}';
    ids    uuid[];
    jobs   bigint[];
    k      integer;
    i      integer;
    tids   tid[];
BEGIN
    -- Owner of the n-th row taken: the jobs in turn, each up to its count.
    FOR i IN 1 .. coalesce((SELECT max(c) FROM unnest(p_counts) AS c), 0) LOOP
        FOR k IN 1 .. coalesce(array_length(p_job_ids, 1), 0) LOOP
            IF p_counts[k] >= i THEN
                owners := owners || p_job_ids[k];
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(owners) = 0 THEN
        RETURN;
    END IF;
    -- The walk: at most a depth of 4 rows per row asked for (at least 256)
    -- from the newest end of the due index, counted in rows. Rows first of
    -- their lane are looked for only among them, so a backlog of
    -- lane-blocked rows is not walked to its end on every call; a lane's
    -- first row deeper down has its own job, or is handed on by its
    -- predecessor's. (00029 bounded the walk by the due time found at that
    -- depth, which bounds nothing when the rows share it, as the rows one
    -- transaction inserts do: 2,300 rows walked per call, 16 ms, in
    -- `mio bench dispatch --lanes 64`.) The rows are joined back by the
    -- version the walk saw (a TID scan); one updated since is skipped.
    SELECT array_agg(c.id), array_agg(c.jid), array_agg(c.tid) INTO ids, jobs, tids
    FROM (
        SELECT o.id, j.id AS jid, o.ctid AS tid
        FROM (
            SELECT d.ctid AS tid, d.next_attempt_at
            FROM mio.outbox AS d
            WHERE d.tenant_id = p_tenant AND d.active AND d.next_attempt_at <= now()
            ORDER BY d.next_attempt_at DESC
            LIMIT greatest(4 * cardinality(owners), 256)
        ) AS w
        JOIN mio.outbox AS o ON o.ctid = w.tid
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        JOIN river.river_job AS j ON j.id = o.job_id
        WHERE o.tenant_id = p_tenant AND o.active AND o.handoff_state = 'queued'
          AND o.next_attempt_at <= now() AND o.channel_type = ANY (p_unlimited)
          AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL
          AND j.state = 'available'
          AND (SELECT 1 FROM mio.outbox AS p
               WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                 AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
               LIMIT 1) IS NULL
        ORDER BY w.next_attempt_at DESC
        LIMIT cardinality(owners)
        FOR NO KEY UPDATE OF o SKIP LOCKED
        FOR UPDATE OF j SKIP LOCKED
    ) AS c;
    IF ids IS NULL THEN
        RETURN;
    END IF;
    -- Their jobs go, unless a job names more rows than this one (a group of
    -- sends shares one job, jobs.DispatchArgs.More): it must stay for the
    -- others, and runs to find this one taken.
    DELETE FROM river.river_job AS j WHERE j.id = ANY (jobs) AND NOT (j.args ? 'more');
    RETURN QUERY
    WITH input AS (
        SELECT t.id, t.tid, owners[t.n] AS owner FROM unnest(ids, tids) WITH ORDINALITY AS t(id, tid, n)
    ),
    upd AS (
        -- The rows are locked: their versions stay the ones found.
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = input.owner,
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant AND o.id = input.id
        RETURNING o.*
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, 'sending', 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.id, upd.job_id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id,
           upd.text, upd.rich_content, upd.attachments, upd.edit_of, upd.attempt_no,
           upd.series_first_attempt, upd.created_at, upd.provider_state,
           coalesce((SELECT orig.provider_message_id FROM mio.outbox AS orig
                     WHERE orig.tenant_id = p_tenant AND orig.id = upd.edit_of), '')
    FROM upd;
END
$$;
-- +goose StatementEnd

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

    -- Their own jobs go, unless River is running them or they name more
    -- rows (a group's job stays for the others; see dispatch_claim_extras).
    DELETE FROM river.river_job AS j
    WHERE j.id IN (SELECT jj.id FROM river.river_job AS jj
                   WHERE jj.id = ANY (jobs) AND jj.state IN ('available', 'scheduled', 'retryable')
                     AND NOT (jj.args ? 'more')
                   FOR UPDATE SKIP LOCKED);

    -- A job that starts draining a lane adopts the queued rows behind:
    -- their jobs, not started, are deleted (River would only run them to
    -- find the lane busy), and the job is recorded as theirs, as it is for
    -- rows whose job is gone or finished (an earlier job's hand-on) and
    -- for rows of a group's job, which stays for the group's other rows
    -- (the drain is what sends these: a group's job that finished first
    -- would leave them to the sweeper).
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
                       WHERE jj.state IN ('available', 'scheduled', 'retryable') AND NOT (jj.args ? 'more')
                       FOR UPDATE OF jj SKIP LOCKED)
        RETURNING j.id
    )
    UPDATE mio.outbox AS o SET job_id = behind.owner
    FROM behind
    LEFT JOIN river.river_job AS j ON j.id = behind.job_id
    WHERE o.tenant_id = p_tenant AND o.id = behind.id
      AND (behind.job_id IS NULL OR behind.job_id IN (SELECT gone.id FROM gone) OR j.id IS NULL
           OR j.state IN ('completed', 'cancelled', 'discarded') OR j.args ? 'more');

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
CREATE OR REPLACE FUNCTION mio.dispatch_claim_extras(p_tenant uuid, p_job_ids bigint[], p_counts integer[],
                                          p_unlimited text[], p_lease_seconds double precision)
    RETURNS TABLE (id uuid, job_id bigint, account_id uuid, channel_type text, conversation_id text,
                   thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid,
                   attempt_no integer, series_first_attempt integer, created_at timestamptz,
                   provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    -- Walk the due index from its newest end and stop at the limit: never
    -- collect and sort every due row (nor compile it). Generic plans:
    -- the walk is an index order, the rest lookups by TID and job id;
    -- custom plans were re-planned on every call.
    SET enable_sort = off SET enable_bitmapscan = off SET jit = off SET plan_cache_mode = force_generic_plan
    AS $$
#variable_conflict use_column
DECLARE
    owners bigint[] := '{}';
    ids    uuid[];
    jobs   bigint[];
    k      integer;
    i      integer;
    tids   tid[];
BEGIN
    -- Owner of the n-th row taken: the jobs in turn, each up to its count.
    FOR i IN 1 .. coalesce((SELECT max(c) FROM unnest(p_counts) AS c), 0) LOOP
        FOR k IN 1 .. coalesce(array_length(p_job_ids, 1), 0) LOOP
            IF p_counts[k] >= i THEN
                owners := owners || p_job_ids[k];
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(owners) = 0 THEN
        RETURN;
    END IF;
    -- The walk: at most a depth of 4 rows per row asked for (at least 256)
    -- from the newest end of the due index, counted in rows. Rows first of
    -- their lane are looked for only among them, so a backlog of
    -- lane-blocked rows is not walked to its end on every call; a lane's
    -- first row deeper down has its own job, or is handed on by its
    -- predecessor's. (00029 bounded the walk by the due time found at that
    -- depth, which bounds nothing when the rows share it, as the rows one
    -- transaction inserts do: 2,300 rows walked per call, 16 ms, in
    -- `mio bench dispatch --lanes 64`.) The rows are joined back by the
    -- version the walk saw (a TID scan); one updated since is skipped.
    SELECT array_agg(c.id), array_agg(c.jid), array_agg(c.tid) INTO ids, jobs, tids
    FROM (
        SELECT o.id, j.id AS jid, o.ctid AS tid
        FROM (
            SELECT d.ctid AS tid, d.next_attempt_at
            FROM mio.outbox AS d
            WHERE d.tenant_id = p_tenant AND d.active AND d.next_attempt_at <= now()
            ORDER BY d.next_attempt_at DESC
            LIMIT greatest(4 * cardinality(owners), 256)
        ) AS w
        JOIN mio.outbox AS o ON o.ctid = w.tid
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        JOIN river.river_job AS j ON j.id = o.job_id
        WHERE o.tenant_id = p_tenant AND o.active AND o.handoff_state = 'queued'
          AND o.next_attempt_at <= now() AND o.channel_type = ANY (p_unlimited)
          AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL
          AND j.state = 'available'
          AND (SELECT 1 FROM mio.outbox AS p
               WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                 AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
               LIMIT 1) IS NULL
        ORDER BY w.next_attempt_at DESC
        LIMIT cardinality(owners)
        FOR NO KEY UPDATE OF o SKIP LOCKED
        FOR UPDATE OF j SKIP LOCKED
    ) AS c;
    IF ids IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM river.river_job AS j WHERE j.id = ANY (jobs);
    RETURN QUERY
    WITH input AS (
        SELECT t.id, t.tid, owners[t.n] AS owner FROM unnest(ids, tids) WITH ORDINALITY AS t(id, tid, n)
    ),
    upd AS (
        -- The rows are locked: their versions stay the ones found.
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = input.owner,
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant AND o.id = input.id
        RETURNING o.*
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, 'sending', 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.id, upd.job_id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id,
           upd.text, upd.rich_content, upd.attachments, upd.edit_of, upd.attempt_no,
           upd.series_first_attempt, upd.created_at, upd.provider_state,
           coalesce((SELECT orig.provider_message_id FROM mio.outbox AS orig
                     WHERE orig.tenant_id = p_tenant AND orig.id = upd.edit_of), '')
    FROM upd;
END
$$;
-- +goose StatementEnd

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
