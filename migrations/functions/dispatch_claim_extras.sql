-- mio.dispatch_claim_extras lets running dispatch jobs take over more
-- rows: it claims up to sum(p_counts) rows of p_tenant that can be sent
-- now, need no rate-limit token (their channel is one of p_unlimited and
-- their account sets no limit) and that no other transaction holds; it
-- hands them out to the jobs p_job_ids (up to p_counts[k] each, in turn),
-- records the owning job on each row, moves them to sending under a lease
-- of p_lease_seconds with their event, and returns them with the job each
-- row had before (prior_job_id). Newest rows first: River fetches the
-- oldest jobs, so the two rarely meet.

CREATE OR REPLACE FUNCTION mio.dispatch_claim_extras(p_tenant uuid, p_job_ids bigint[], p_counts integer[],
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
    SET enable_bitmapscan = off SET jit = off SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off
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
    -- The walk: at most a depth of 4 rows per row asked for (at
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
