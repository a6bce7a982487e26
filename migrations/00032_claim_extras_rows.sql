-- +goose Up
-- mio.dispatch_claim_extras walks a depth counted in rows (issue 15,
-- targets 2 and 4; see the comment in the function). pg_stat_statements
-- over `mio bench dispatch --lanes 64`: 159 calls at 18 ms, 2.9 s of a
-- 5.2 s run, inside the shared finish-and-claim transactions every lane's
-- hand-on waits for; auto_explain: 2,300 rows removed by filter per call.
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
    -- collect and sort every due row (nor compile it).
    SET enable_sort = off SET enable_bitmapscan = off SET jit = off
    AS $$
#variable_conflict use_column
DECLARE
    owners bigint[] := '{}';
    ids    uuid[];
    jobs   bigint[];
    k      integer;
    i      integer;
    floor_at timestamptz;
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
    -- The walk's floor: the due time of the row a depth of 4 per row asked
    -- for (at least 256) from the newest end of the due index (none when
    -- fewer rows are due; an index-only walk). Rows first of their lane
    -- are looked for only above it, so a backlog of lane-blocked rows is
    -- not walked to its end on every call; a lane's first row below the
    -- floor has its own job, or is handed on by its predecessor's.
    SELECT d.next_attempt_at INTO floor_at
    FROM mio.outbox AS d
    WHERE d.tenant_id = p_tenant AND d.active AND d.next_attempt_at <= now()
    ORDER BY d.next_attempt_at DESC
    OFFSET greatest(4 * cardinality(owners), 256) LIMIT 1;
    SELECT array_agg(c.id), array_agg(c.jid) INTO ids, jobs
    FROM (
        SELECT o.id, j.id AS jid
        FROM mio.outbox AS o
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        JOIN river.river_job AS j ON j.id = o.job_id
        WHERE o.tenant_id = p_tenant AND o.active AND o.handoff_state = 'queued'
          AND o.next_attempt_at <= now() AND o.next_attempt_at >= coalesce(floor_at, '-infinity')
          AND o.channel_type = ANY (p_unlimited)
          AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL
          AND j.state = 'available'
          AND (SELECT 1 FROM mio.outbox AS p
               WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                 AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
               LIMIT 1) IS NULL
        ORDER BY o.next_attempt_at DESC
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
        SELECT t.id, owners[t.n] AS owner FROM unnest(ids) WITH ORDINALITY AS t(id, n)
    ),
    upd AS (
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = input.owner,
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.tenant_id = p_tenant AND o.id = ANY (ids) AND o.id = input.id
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
