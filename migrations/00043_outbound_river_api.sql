-- +goose Up
-- The send path uses River only through its client. No function of MIO
-- reads or writes River's tables on it:
--   - mio.dispatch_claim_extras and mio.dispatch_claim_next take rows over
--     by their own compare-and-set (queued, due, first of their lane,
--     SKIP LOCKED) and return the jobs the rows leave, which the
--     dispatcher deletes with River's JobDeleteMany (a job River already
--     runs is left to run and find its row taken);
--   - a dispatch job killed with its worker is rescued by River's rescuer
--     (the job's Timeout, the client's RescueStuckJobsAfter), and waiting
--     jobs are scheduled by River's scheduler: mio.worker_reclaim,
--     mio.dispatch_job_row and mio.worker_schedule go. The table
--     mio.worker_heartbeats stays, unused by this release, for workers of
--     the previous one while the pods roll: their heartbeat refresh keeps
--     succeeding (without it they would stop their jobs), only their
--     reclaim and schedule calls fail and are logged;
--   - the outbox sweeper asks River's client which jobs are live
--     (JobList): mio.dispatch_job_live goes.
SET lock_timeout = '10s';

DROP FUNCTION IF EXISTS mio.worker_schedule(text, float8, int);
DROP FUNCTION IF EXISTS mio.worker_reclaim(text, float8, int);
DROP FUNCTION IF EXISTS mio.dispatch_job_row(bigint);
DROP FUNCTION IF EXISTS mio.dispatch_job_live(bigint, timestamptz);
DROP FUNCTION IF EXISTS mio.dispatch_claim_extras(uuid, bigint[], integer[], text[], double precision);
DROP FUNCTION IF EXISTS mio.dispatch_claim_next(uuid, bigint[], uuid[], text[], boolean[], boolean[], text[],
                                                double precision);

-- mio.dispatch_claim_extras lets running dispatch jobs take over more
-- rows: it claims up to sum(p_counts) rows of p_tenant that can be sent
-- now, need no rate-limit token (their channel is one of p_unlimited and
-- their account sets no limit) and that no other transaction holds; it
-- hands them out to the jobs p_job_ids (up to p_counts[k] each, in turn),
-- records the owning job on each row, moves them to sending under a lease
-- of p_lease_seconds with their event, and returns them with the job each
-- row had before (prior_job_id). Newest rows first: River fetches the
-- oldest jobs, so the two rarely meet.
-- +goose StatementBegin
CREATE FUNCTION mio.dispatch_claim_extras(p_tenant uuid, p_job_ids bigint[], p_counts integer[],
                                          p_unlimited text[], p_lease_seconds double precision)
    RETURNS TABLE (id uuid, job_id bigint, account_id uuid, channel_type text, conversation_id text,
                   thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid,
                   attempt_no integer, series_first_attempt integer, created_at timestamptz,
                   provider_state text, edit_provider_message_id text, prior_job_id bigint)
    LANGUAGE plpgsql
    -- Each walked row is joined back by TID in a LATERAL and updated by
    -- TID alone. River's tables are not touched: the rows' former jobs
    -- are returned (prior_job_id) for the caller to delete through
    -- River's client.
    SET enable_sort = off SET enable_bitmapscan = off SET jit = off SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_material = off
    SET enable_indexscan = on -- restored on return: the update turns it off
    AS $$
#variable_conflict use_column
DECLARE
    owners bigint[] := '{}';
    walk   tid[];
    ids    uuid[];
    jobs   bigint[];
    tids   tid[];
    edits  text[];
    k      integer;
    i      integer;
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
    -- The walk (00033): at most a depth of 4 rows per row asked for (at
    -- least 256) from the newest end of the due index.
    SELECT array_agg(w.tid) INTO walk
    FROM (
        SELECT d.ctid AS tid
        FROM mio.outbox AS d
        WHERE d.tenant_id = p_tenant AND d.active AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at DESC
        LIMIT greatest(4 * cardinality(owners), 256)
    ) AS w;
    IF walk IS NULL THEN
        RETURN;
    END IF;
    -- In walk order, the rows first of their lane, each found by the
    -- version the walk saw (one updated since is skipped) and locked (one
    -- another transaction holds is skipped), until there is one per owner.
    SELECT array_agg(c.id), array_agg(c.job_id), array_agg(c.tid), array_agg(c.edit) INTO ids, jobs, tids, edits
    FROM (
        SELECT r.id, r.job_id, r.tid,
               CASE WHEN r.edit_of IS NULL THEN ''
                    ELSE coalesce((SELECT CASE WHEN e.id = r.edit_of THEN e.provider_message_id END
                                   FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                                         WHERE y.tenant_id = p_tenant AND y.id >= r.edit_of
                                         ORDER BY y.id LIMIT 1) AS e), '') END AS edit
        FROM unnest(walk) AS w(tid)
        CROSS JOIN LATERAL (
            SELECT o.id, o.ctid AS tid, o.job_id, o.edit_of FROM mio.outbox AS o
            WHERE o.ctid = w.tid AND o.tenant_id = p_tenant AND o.active AND o.handoff_state = 'queued'
              AND o.next_attempt_at <= now() AND o.channel_type = ANY (p_unlimited)
              AND EXISTS (SELECT 1 FROM mio.accounts AS a
                          WHERE a.tenant_id = o.tenant_id AND a.id = o.account_id
                            AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL)
              AND (SELECT 1 FROM mio.outbox AS p
                   WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                     AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
                   ORDER BY p.seq LIMIT 1) IS NULL
            FOR NO KEY UPDATE SKIP LOCKED
        ) AS r
        LIMIT cardinality(owners)
    ) AS c;
    IF ids IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('enable_indexscan', 'off', true);
    RETURN QUERY
    WITH input AS (
        SELECT t.id, t.tid, t.edit, t.prior, owners[t.n] AS owner
        FROM unnest(ids, tids, edits, jobs) WITH ORDINALITY AS t(id, tid, edit, prior, n)
    ),
    upd AS (
        -- The rows are locked: their versions stay the ones found.
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = input.owner,
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant AND o.id = input.id
        RETURNING o.id, o.job_id, o.account_id, o.channel_type, o.conversation_id, o.thread_id, o.text,
                  o.rich_content, o.attachments, o.edit_of, o.attempt_no, o.series_first_attempt, o.created_at,
                  o.provider_state, input.edit, input.prior
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, 'sending', 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.id, upd.job_id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id,
           upd.text, upd.rich_content, upd.attachments, upd.edit_of, upd.attempt_no,
           upd.series_first_attempt, upd.created_at, upd.provider_state, upd.edit, upd.prior
    FROM upd;
END
$$;
-- +goose StatementEnd

-- mio.dispatch_claim_next moves lanes on once their messages' outcomes are
-- recorded: each lane's first active row, when it is queued and due and
-- needs no rate-limit token, is claimed for the asking job; a due row
-- that needs one is only named (it gets a job of its own).
-- +goose StatementBegin
CREATE FUNCTION mio.dispatch_claim_next(p_tenant uuid, p_job_ids bigint[], p_account_ids uuid[],
                                        p_conversation_ids text[], p_claim boolean[], p_adopt boolean[],
                                        p_unlimited text[], p_lease_seconds double precision)
    RETURNS TABLE (lane integer, claimed boolean, id uuid, account_id uuid, channel_type text,
                   conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb,
                   edit_of uuid, attempt_no integer, series_first_attempt integer, attempts integer,
                   created_at timestamptz, provider_state text, edit_provider_message_id text,
                   prior_job_ids bigint[])
    LANGUAGE plpgsql
    -- The adoption and the claim update rows by TID alone, the lane's
    -- first row is found through outbox_lane's order, the edit's original
    -- by a positional primary-key probe. River's tables are not touched:
    -- the jobs the claimed and adopted rows leave are returned
    -- (prior_job_ids, on each lane's claimed row) for the caller to
    -- delete through River's client.
    SET jit = off SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
    SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off
    SET enable_indexscan = on -- restored on return: the updates turn it off
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
    edits  text[];
    btids  tid[];
    owners bigint[];
    bks    integer[];
    bjobs  bigint[];
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
           NULL::text, NULL::bigint[]
    FROM unnest(hks, hids, haccs, hclaim) AS h(k, id, acc, claim)
    WHERE NOT h.claim;

    -- The others are locked and re-checked on their newest version; a row
    -- another claim holds is that claim's to send. No lower seq can become
    -- active again (resends and requeues draw a new seq): still queued
    -- means still first. Found by the version the probe saw (a TID scan:
    -- no estimate can turn it into a scan of the tenant's outbox); a row
    -- updated since is not found, and whoever updated it moves the lane
    -- on, as for a locked one.
    SELECT array_agg(h.k), array_agg(c.id), array_agg(c.seq), array_agg(c.job_id), array_agg(c.tid),
           array_agg(CASE WHEN c.edit_of IS NULL THEN ''
                          ELSE coalesce((SELECT CASE WHEN e.id = c.edit_of THEN e.provider_message_id END
                                         FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                                               WHERE y.tenant_id = p_tenant AND y.id >= c.edit_of
                                               ORDER BY y.id LIMIT 1) AS e), '') END)
    INTO ks, ids, seqs, jobs, tids, edits
    FROM unnest(hks, htids, hids, hclaim) AS h(k, tid, id, claim)
    CROSS JOIN LATERAL (
        SELECT o.id, o.seq, o.job_id, o.ctid AS tid, o.edit_of FROM mio.outbox AS o
        WHERE o.ctid = h.tid AND o.tenant_id = p_tenant AND o.id = h.id
          AND o.handoff_state = 'queued' AND o.next_attempt_at <= now()
        FOR NO KEY UPDATE SKIP LOCKED
    ) AS c
    WHERE h.claim;
    IF ids IS NULL THEN
        RETURN;
    END IF;

    -- A job that starts draining a lane adopts the queued rows behind: it
    -- is recorded as their job (the drain is what sends them), and the
    -- jobs they leave are returned with the lane's claimed row, as the
    -- claimed row's own job is.
    WITH behind AS (
        SELECT b.tid, b.job_id, c.k, p_job_ids[c.k] AS owner
        FROM unnest(ks, seqs) AS c(k, seq)
        CROSS JOIN LATERAL (
            SELECT o.ctid AS tid, o.job_id FROM mio.outbox AS o
            WHERE o.tenant_id = p_tenant AND o.account_id = p_account_ids[c.k]
              AND o.conversation_id = p_conversation_ids[c.k] AND o.active AND o.seq > c.seq
              AND o.handoff_state = 'queued' AND o.job_id IS DISTINCT FROM p_job_ids[c.k]
            ORDER BY o.seq
            LIMIT 1000
        ) AS b
        WHERE p_adopt[c.k]
    )
    SELECT array_agg(behind.tid), array_agg(behind.owner), array_agg(behind.k), array_agg(behind.job_id)
    INTO btids, owners, bks, bjobs
    FROM behind;
    -- By the version the probe saw (a row updated since was taken by its
    -- own job or moved on, and is left alone).
    PERFORM set_config('enable_indexscan', 'off', true);
    IF btids IS NOT NULL THEN
        UPDATE mio.outbox AS o SET job_id = x.owner
        FROM unnest(btids, owners) AS x(tid, owner)
        WHERE o.ctid = x.tid AND o.tenant_id = p_tenant;
    END IF;

    RETURN QUERY
    WITH input AS (
        SELECT c.k, c.id, c.tid, c.edit, c.job_id FROM unnest(ks, ids, tids, edits, jobs) AS c(k, id, tid, edit, job_id)
    ),
    upd AS (
        -- The rows are locked: their versions stay the ones found.
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = p_job_ids[input.k],
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant AND o.id = input.id
        RETURNING input.k AS lane_k, input.edit,
                  CASE WHEN input.job_id IS DISTINCT FROM p_job_ids[input.k] THEN input.job_id END AS prior_job_id, o.*
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, 'sending', 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.lane_k, true, upd.id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id,
           upd.text, upd.rich_content, upd.attachments, upd.edit_of, upd.attempt_no,
           upd.series_first_attempt, upd.attempts, upd.created_at, upd.provider_state, upd.edit,
           array_remove(array_prepend(upd.prior_job_id,
                                      ARRAY(SELECT DISTINCT b.job FROM unnest(bks, bjobs) AS b(k, job)
                                            WHERE b.k = upd.lane_k AND b.job IS NOT NULL)), NULL)
    FROM upd;
END
$$;
-- +goose StatementEnd

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.dispatch_claim_extras(uuid, bigint[], integer[], text[], double precision);
DROP FUNCTION IF EXISTS mio.dispatch_claim_next(uuid, bigint[], uuid[], text[], boolean[], boolean[], text[],
                                                double precision);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_claim_extras(p_tenant uuid, p_job_ids bigint[], p_counts integer[],
                                          p_unlimited text[], p_lease_seconds double precision)
    RETURNS TABLE (id uuid, job_id bigint, account_id uuid, channel_type text, conversation_id text,
                   thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid,
                   attempt_no integer, series_first_attempt integer, created_at timestamptz,
                   provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    -- As in 00033, with each row joined back by TID in a LATERAL (never a
    -- join the planner may turn around: a generic plan made on a young
    -- outbox read the tenant's lane index once per walked row, 509,413
    -- rows removed by a join filter in one call, 116 ms) and the update by
    -- TID alone (index scans off).
    SET enable_sort = off SET enable_bitmapscan = off SET jit = off SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_material = off
    SET enable_indexscan = on -- restored on return: the update turns it off
    AS $$
#variable_conflict use_column
DECLARE
    owners bigint[] := '{}';
    walk   tid[];
    ids    uuid[];
    jobs   bigint[];
    tids   tid[];
    edits  text[];
    k      integer;
    i      integer;
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
    -- The walk (00033): at most a depth of 4 rows per row asked for (at
    -- least 256) from the newest end of the due index.
    SELECT array_agg(w.tid) INTO walk
    FROM (
        SELECT d.ctid AS tid
        FROM mio.outbox AS d
        WHERE d.tenant_id = p_tenant AND d.active AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at DESC
        LIMIT greatest(4 * cardinality(owners), 256)
    ) AS w;
    IF walk IS NULL THEN
        RETURN;
    END IF;
    -- In walk order, the rows first of their lane whose own job has not
    -- started, each found by the version the walk saw (one updated since
    -- is skipped) and locked with its job, until there is one per owner.
    SELECT array_agg(c.id), array_agg(c.jid), array_agg(c.tid), array_agg(c.edit) INTO ids, jobs, tids, edits
    FROM (
        SELECT r.id, j.jid, r.tid,
               CASE WHEN r.edit_of IS NULL THEN ''
                    ELSE coalesce((SELECT CASE WHEN e.id = r.edit_of THEN e.provider_message_id END
                                   FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                                         WHERE y.tenant_id = p_tenant AND y.id >= r.edit_of
                                         ORDER BY y.id LIMIT 1) AS e), '') END AS edit
        FROM unnest(walk) AS w(tid)
        CROSS JOIN LATERAL (
            SELECT o.id, o.ctid AS tid, o.job_id, o.edit_of FROM mio.outbox AS o
            WHERE o.ctid = w.tid AND o.tenant_id = p_tenant AND o.active AND o.handoff_state = 'queued'
              AND o.next_attempt_at <= now() AND o.channel_type = ANY (p_unlimited)
              AND EXISTS (SELECT 1 FROM mio.accounts AS a
                          WHERE a.tenant_id = o.tenant_id AND a.id = o.account_id
                            AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL)
              AND (SELECT 1 FROM mio.outbox AS p
                   WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                     AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
                   ORDER BY p.seq LIMIT 1) IS NULL
            FOR NO KEY UPDATE SKIP LOCKED
        ) AS r
        CROSS JOIN LATERAL (
            SELECT x.id AS jid FROM river.river_job AS x
            WHERE x.id = r.job_id AND x.state = 'available'
            FOR UPDATE SKIP LOCKED
        ) AS j
        LIMIT cardinality(owners)
    ) AS c;
    IF ids IS NULL THEN
        RETURN;
    END IF;
    -- Their jobs go, unless a job names more rows than this one (a group of
    -- sends shares one job, jobs.DispatchArgs.More): it must stay for the
    -- others, and runs to find this one taken.
    DELETE FROM river.river_job AS j WHERE j.id = ANY (jobs) AND NOT (j.args ? 'more');
    PERFORM set_config('enable_indexscan', 'off', true);
    RETURN QUERY
    WITH input AS (
        SELECT t.id, t.tid, t.edit, owners[t.n] AS owner
        FROM unnest(ids, tids, edits) WITH ORDINALITY AS t(id, tid, edit, n)
    ),
    upd AS (
        -- The rows are locked: their versions stay the ones found.
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = input.owner,
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant AND o.id = input.id
        RETURNING o.id, o.job_id, o.account_id, o.channel_type, o.conversation_id, o.thread_id, o.text,
                  o.rich_content, o.attachments, o.edit_of, o.attempt_no, o.series_first_attempt, o.created_at,
                  o.provider_state, input.edit
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, 'sending', 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.id, upd.job_id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id,
           upd.text, upd.rich_content, upd.attachments, upd.edit_of, upd.attempt_no,
           upd.series_first_attempt, upd.created_at, upd.provider_state, upd.edit
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
    -- As in 00033, with the plans 00034 gives the claim and the finish:
    -- the adoption and the claim update rows by TID alone (index scans
    -- off: a generic plan made on a young outbox updated the adopted rows
    -- through a bitmap scan of the tenant's outbox), sorts off so that an
    -- index order decides (outbox_lane), and the edit's original found by
    -- a positional primary-key probe.
    SET jit = off SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
    SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off
    SET enable_indexscan = on -- restored on return: the updates turn it off
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
    edits  text[];
    btids  tid[];
    owners bigint[];
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
    SELECT array_agg(h.k), array_agg(c.id), array_agg(c.seq), array_agg(c.job_id), array_agg(c.tid),
           array_agg(CASE WHEN c.edit_of IS NULL THEN ''
                          ELSE coalesce((SELECT CASE WHEN e.id = c.edit_of THEN e.provider_message_id END
                                         FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                                               WHERE y.tenant_id = p_tenant AND y.id >= c.edit_of
                                               ORDER BY y.id LIMIT 1) AS e), '') END)
    INTO ks, ids, seqs, jobs, tids, edits
    FROM unnest(hks, htids, hids, hclaim) AS h(k, tid, id, claim)
    CROSS JOIN LATERAL (
        SELECT o.id, o.seq, o.job_id, o.ctid AS tid, o.edit_of FROM mio.outbox AS o
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
        SELECT b.tid, b.job_id, p_job_ids[c.k] AS owner
        FROM unnest(ks, seqs) AS c(k, seq)
        CROSS JOIN LATERAL (
            SELECT o.ctid AS tid, o.job_id FROM mio.outbox AS o
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
    SELECT array_agg(behind.tid), array_agg(behind.owner) INTO btids, owners
    FROM behind
    LEFT JOIN river.river_job AS j ON j.id = behind.job_id
    WHERE behind.job_id IS NULL OR behind.job_id IN (SELECT gone.id FROM gone) OR j.id IS NULL
          OR j.state IN ('completed', 'cancelled', 'discarded') OR j.args ? 'more';
    -- By the version the probe saw (a row updated since was taken by its
    -- own job or moved on, and is left alone).
    PERFORM set_config('enable_indexscan', 'off', true);
    IF btids IS NOT NULL THEN
        UPDATE mio.outbox AS o SET job_id = x.owner
        FROM unnest(btids, owners) AS x(tid, owner)
        WHERE o.ctid = x.tid AND o.tenant_id = p_tenant;
    END IF;

    RETURN QUERY
    WITH input AS (
        SELECT c.k, c.id, c.tid, c.edit FROM unnest(ks, ids, tids, edits) AS c(k, id, tid, edit)
    ),
    upd AS (
        -- The rows are locked: their versions stay the ones found.
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = p_job_ids[input.k],
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant AND o.id = input.id
        RETURNING input.k AS lane_k, input.edit, o.*
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, 'sending', 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.lane_k, true, upd.id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id,
           upd.text, upd.rich_content, upd.attachments, upd.edit_of, upd.attempt_no,
           upd.series_first_attempt, upd.attempts, upd.created_at, upd.provider_state, upd.edit
    FROM upd;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION mio.dispatch_job_live(p_job_id bigint, p_stuck_before timestamptz) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    IF p_job_id IS NULL THEN
        RETURN false;
    END IF;
    RETURN EXISTS (
        SELECT 1 FROM river.river_job j
        WHERE j.id = p_job_id
          AND (j.state IN ('available', 'pending', 'scheduled', 'retryable')
               OR (j.state = 'running' AND j.attempted_at > p_stuck_before))
    );
END
$$;
-- +goose StatementEnd

-- mio.dispatch_job_row returns the outbox row named in the arguments of
-- River dispatch job p_job_id (NULL when the job is gone). A dispatch job
-- also holds rows it took over — extras, the next messages of the lanes it
-- drained — under its id; when the job is reclaimed from a dead worker,
-- its retry resumes only this row, and the reclaimer gives the others jobs
-- of their own (queries/worker_heartbeats.sql, OutboxLeasesEnd).
-- (plpgsql: River's tables are created after MIO's migrations.)
-- +goose StatementBegin
CREATE FUNCTION mio.dispatch_job_row(p_job_id bigint) RETURNS uuid
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN (SELECT (j.args ->> 'outbox_id')::uuid FROM river.river_job AS j WHERE j.id = p_job_id);
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.dispatch_job_row(bigint) TO mio_runtime;

-- mio.worker_reclaim: called by live worker p_client_id, reclaims the
-- running River jobs (up to p_max) of the processes whose heartbeat row
-- expired, the way River's own rescuer does for jobs running too long:
-- available again at once with an error appended (discarded once their
-- attempts are used up, cancelled when a cancel was asked for). Only a
-- worker alive for a whole timeout p_ttl_seconds judges: after an outage
-- of the database every worker has a timeout to refresh its row again
-- before any is declared dead. A process without a row (an older
-- version, a client built elsewhere) is never judged: its jobs are left
-- to River's rescuer. The expired rows are locked (SKIP LOCKED: a row
-- being refreshed is alive), so a refresh waits for the reclaim. Returns
-- the reclaimed jobs with the tenant of dispatch jobs (the nil uuid for
-- other kinds), whose sending rows' leases the caller ends (a dead
-- process sends nothing). Rows expired over an hour ago are deleted.
-- (plpgsql: River's tables are created after these migrations.)
-- +goose StatementBegin
CREATE FUNCTION mio.worker_reclaim(p_client_id text, p_ttl_seconds float8, p_max int)
    RETURNS TABLE (job_id bigint, kind text, tenant_id uuid, dead_client text)
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM mio.worker_heartbeats AS h
        WHERE h.client_id = p_client_id AND h.expires_at >= now()
          AND h.alive_since <= now() - make_interval(secs => p_ttl_seconds)
    ) THEN
        RETURN;
    END IF;
    DELETE FROM mio.worker_heartbeats AS h WHERE h.expires_at < now() - interval '1 hour';
    IF NOT EXISTS (SELECT 1 FROM mio.worker_heartbeats AS h WHERE h.expires_at < now()) THEN
        RETURN; -- nobody dead, the common case: one look at this small table
    END IF;
    RETURN QUERY
    WITH dead AS (
        SELECT h.client_id FROM mio.worker_heartbeats AS h
        WHERE h.expires_at < now()
        FOR UPDATE SKIP LOCKED
    ), stuck AS (
        SELECT j.id, d.client_id,
               CASE WHEN j.metadata ? 'cancel_attempted_at' THEN 'cancelled'
                    WHEN j.attempt >= j.max_attempts THEN 'discarded'
                    ELSE 'available' END AS next_state
        FROM river.river_job AS j
        JOIN dead AS d ON d.client_id = j.attempted_by[cardinality(j.attempted_by)]
        WHERE j.state = 'running'
        ORDER BY j.id
        LIMIT p_max
        FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE river.river_job AS j
    SET state = s.next_state::river.river_job_state,
        finalized_at = CASE WHEN s.next_state = 'available' THEN NULL ELSE now() END,
        scheduled_at = CASE WHEN s.next_state = 'available' THEN now() ELSE j.scheduled_at END,
        errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', greatest(j.attempt, 0),
            'error', format('worker %s stopped refreshing its heartbeat: job reclaimed', s.client_id), 'trace', '')),
        metadata = j.metadata || jsonb_build_object('river:rescue_count',
            coalesce(CASE WHEN jsonb_typeof(j.metadata -> 'river:rescue_count') = 'number'
                          THEN (j.metadata ->> 'river:rescue_count')::int END, 0) + 1)
    FROM stuck AS s
    WHERE j.id = s.id
    RETURNING j.id, j.kind,
              coalesce(CASE WHEN j.kind = 'mio.dispatch' THEN (j.args ->> 'tenant_id')::uuid END, '00000000-0000-0000-0000-000000000000'),
              s.client_id;
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.worker_reclaim(text, float8, int) TO mio_runtime;

-- mio.worker_schedule: called by live worker p_client_id, makes up to
-- p_max due River jobs (scheduled or retryable, scheduled_at passed)
-- available when River has no live leader — the way River's scheduler
-- does it, which runs only on the leader. A leader killed with SIGKILL
-- keeps its leadership row until it expires (~15 s), and after a
-- crash-restart of PostgreSQL the (unlogged) leader table is empty until
-- the next election: meanwhile a retry's backoff or a snoozed job (a
-- worker snoozes the jobs it is handed while its own heartbeat is lost)
-- would wait for whoever is elected next — in TestChaos once 30 s past the
-- lease of the send it held. "No live leader": no unexpired row in
-- river.river_leader whose leader has an unexpired heartbeat row. Like
-- mio.worker_reclaim, only a worker alive for a whole timeout p_ttl_seconds
-- acts. Jobs with a unique key are left to the leader (River's scheduler
-- settles their conflicts; MIO inserts none that wait). SKIP LOCKED: a job
-- the leader's scheduler or another worker is moving is theirs. Returns
-- the jobs made available. (plpgsql: River's tables are created after
-- these migrations.)
-- +goose StatementBegin
CREATE FUNCTION mio.worker_schedule(p_client_id text, p_ttl_seconds float8, p_max int)
    RETURNS TABLE (job_id bigint, kind text, queue text)
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM mio.worker_heartbeats AS h
        WHERE h.client_id = p_client_id AND h.expires_at >= now()
          AND h.alive_since <= now() - make_interval(secs => p_ttl_seconds)
    ) THEN
        RETURN;
    END IF;
    IF EXISTS (
        SELECT 1 FROM river.river_leader AS l
        JOIN mio.worker_heartbeats AS h ON h.client_id = l.leader_id
        WHERE l.expires_at > now() AND h.expires_at >= now()
    ) THEN
        RETURN; -- a live leader schedules: the common case, two small tables
    END IF;
    RETURN QUERY
    WITH due AS (
        SELECT j.id FROM river.river_job AS j
        WHERE j.state IN ('retryable', 'scheduled') AND j.priority >= 0 AND j.queue IS NOT NULL
          AND j.unique_key IS NULL AND j.scheduled_at <= now()
        ORDER BY j.priority, j.scheduled_at, j.id
        LIMIT p_max
        FOR UPDATE SKIP LOCKED
    )
    UPDATE river.river_job AS j SET state = 'available'
    FROM due
    WHERE j.id = due.id
    RETURNING j.id, j.kind, j.queue;
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.worker_schedule(text, float8, int) TO mio_runtime;
