-- +goose Up
-- The dispatcher's claim and finish find their rows by primary key and
-- TID, whatever the statistics say (issue 15, target 4). They were
-- single statements, `tenant_id = $1 AND id = ANY ($2)` (claim) and an
-- UPDATE … FROM the batch (finish), planned per call. On statistics
-- gathered before the tenant had rows (a new tenant's first seconds: the
-- dispatch bench, a customer's first burst), PostgreSQL estimated the
-- tenant at a few rows and read all of them through a bitmap of
-- tenant_id, the ids only a filter: auto_explain showed finishes of 128
-- rows removing 44,872 rows by filter and claims of 480 removing 19,520;
-- `mio bench dispatch` measured 6,625–7,810 sends/s in such runs against
-- 9,145–9,442 in runs whose analyze happened to come after the warm-up.
-- A cached generic plan is no cure: made on the warm-up's small outbox,
-- it kept the tenant scan (6,137–6,223 sends/s).
--
-- Now each function has two steps, each with one possible plan:
-- 1. the rows are found by primary key and locked, in id order: a
--    LATERAL takes the first row at or after (tenant, id) in id order —
--    only the primary key gives that order, so no estimate can send the
--    lookup to another index that leads with tenant_id (with `id = $x`
--    the order is implied and a generic plan made on a young outbox
--    tied, and picked the idempotency key's index: every row of the
--    tenant read per id) — and a second LATERAL locks that version by TID
--    if it is the row and still qualifies (FOR NO KEY UPDATE waits for a
--    row another transaction holds, then re-checks it);
-- 2. they are updated by the version the lock returned (TID scans; index
--    scans are off for this step, so no estimate of the tenant can turn
--    it into a scan of the tenant's rows). Locked rows keep their version.
-- Sub-plans that must use an index do so through an order only that
-- index gives (the lane check: ORDER BY seq, outbox_lane), with sorts off
-- (a sort of the one row a young outbox is estimated to hold costs
-- nothing, and the lane check went to outbox_due: 4,397 rows read per
-- row claimed in `mio bench dispatch --lanes 64`).
-- Generic plans: the plans do not depend on the values, and planning the
-- two statements per call cost ~0.4 ms each (pg_stat_statements).
-- Results are those of the statements they replace.
--
-- mio.dispatch_claim_extras and mio.dispatch_claim_next (the lane
-- hand-on) get the same treatment: rows joined back and updated by TID
-- (the hand-on's adoption of the rows behind a lane was updated through a
-- bitmap scan of the tenant's outbox: 1,793 rows read to adopt 648 on a
-- young outbox), sorts off, the edit's original by the positional probe.
SET lock_timeout = '10s';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_finish(p_tenant uuid, p_ids uuid[], p_attempt_nos integer[],
                                    p_outcomes text[], p_provider_message_ids text[], p_errors text[],
                                    p_delays_ms bigint[], p_receipt_timeouts_ms bigint[], p_details text[],
                                    p_accepts boolean[])
    RETURNS TABLE (id uuid, attempt_no integer, handoff_state text, outcome text)
    LANGUAGE plpgsql
    SET jit = off SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
    SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off
    SET enable_indexscan = on -- restored on return: step 2 turns it off
    AS $$
#variable_conflict use_column
DECLARE
    ks   integer[];
    tids tid[];
BEGIN
    -- 1. Lock each row still sending the attempt, found by primary key
    --    (the positional probe above), in id order (concurrent lockers of
    --    the same rows queue, never deadlock). A row is sending under this
    --    worker's lease: nothing else updates it meanwhile; if something
    --    did, the finish does not move it, as when its attempt moved on.
    SELECT array_agg(i.k), array_agg(r.tid) INTO ks, tids
    FROM (SELECT u.id, u.k::integer AS k FROM unnest(p_ids) WITH ORDINALITY AS u(id, k) ORDER BY u.id OFFSET 0) AS i
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
    IF ks IS NULL THEN
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
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_claim(p_tenant uuid, p_ids uuid[], p_lease_seconds double precision)
    RETURNS TABLE (id uuid, account_id uuid, channel_type text, conversation_id text, thread_id text, text text,
                   rich_content jsonb, attachments jsonb, edit_of uuid, prior_state text, attempt_no integer,
                   series_first_attempt integer, attempts integer, created_at timestamptz, provider_state text,
                   edit_provider_message_id text)
    LANGUAGE plpgsql
    SET jit = off SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
    SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off
    SET enable_indexscan = on -- restored on return: step 2 turns it off
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
-- +goose StatementEnd

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

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.dispatch_claim(uuid, uuid[], double precision);
DROP FUNCTION IF EXISTS mio.dispatch_finish(uuid, uuid[], integer[], text[], text[], text[], bigint[], bigint[],
                                            text[], boolean[]);
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
