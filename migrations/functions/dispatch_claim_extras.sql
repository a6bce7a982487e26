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
    -- TID alone; every statement that reads the outbox is planned for the
    -- outbox as it is now (dynamic statements: docs/architecture.md,
    -- "Planner safety"). River's tables are not touched: the rows' former
    -- jobs are returned (prior_job_id) for the caller to delete through
    -- River's client.
    AS $$
#variable_conflict use_column
DECLARE
    owners  bigint[] := '{}';
    walk    tid[];
    c       refcursor;
    prior   bigint;
    ed      text;
    r       mio.outbox;
    claimed mio.outbox[] := '{}';
    priors  bigint[] := '{}';
    edits   text[] := '{}';
    k       integer;
    i       integer;
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
    -- least 256) from the newest end of the due index. The depth is a
    -- sub-select, a count the planner cannot see: it plans for the first
    -- tenth of the rows, which the due index's order returns at once,
    -- where a depth it could count (above the rows it estimates for a
    -- young outbox) makes a bitmap scan and a sort of every due row look
    -- cheaper.
    EXECUTE $q$
    SELECT array_agg(w.tid)
    FROM (
        SELECT d.ctid AS tid
        FROM mio.outbox AS d
        WHERE d.tenant_id = $1 AND d.active IS TRUE AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at DESC
        LIMIT (SELECT greatest(4 * $2, 256))
    ) AS w
    $q$ INTO walk USING p_tenant, cardinality(owners);
    IF walk IS NULL THEN
        RETURN;
    END IF;
    -- In walk order, the rows first of their lane, each found by the
    -- version the walk saw (one updated since is skipped) and locked (one
    -- another transaction holds is skipped), until there is one per owner.
    OPEN c NO SCROLL FOR EXECUTE $q$
    SELECT r.job_id,
           CASE WHEN r.edit_of IS NULL THEN ''
                ELSE coalesce((SELECT CASE WHEN e.id = r.edit_of THEN e.provider_message_id END
                               FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                                     WHERE y.tenant_id = $1 AND y.id >= r.edit_of
                                     ORDER BY y.id LIMIT 1) AS e), '') END
    FROM unnest($2::tid[]) AS w(tid)
    CROSS JOIN LATERAL (
        SELECT o.job_id, o.edit_of FROM mio.outbox AS o
        WHERE o.ctid = w.tid AND o.active AND o.handoff_state = 'queued'
          AND o.next_attempt_at <= now() AND o.channel_type = ANY ($3::text[])
          AND EXISTS (SELECT 1 FROM mio.accounts AS a
                      WHERE a.tenant_id = o.tenant_id AND a.id = o.account_id
                        AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL)
          AND (SELECT 1 FROM mio.outbox AS p
               WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                 AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
               ORDER BY p.seq LIMIT 1) IS NULL
        FOR NO KEY UPDATE SKIP LOCKED
    ) AS r
    LIMIT $4
    $q$ USING p_tenant, walk, p_unlimited, cardinality(owners);
    -- Each is claimed for its owner on its locked version (WHERE CURRENT
    -- OF: a TID scan, whatever the statistics say).
    LOOP
        FETCH c INTO prior, ed;
        EXIT WHEN NOT FOUND;
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = owners[cardinality(claimed) + 1],
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        WHERE CURRENT OF c
        RETURNING o.* INTO r;
        claimed := claimed || r;
        priors := priors || prior;
        edits := edits || ed;
    END LOOP;
    CLOSE c;
    IF cardinality(claimed) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
    SELECT p_tenant, u.id, 'sending', 'handoff', 'sending', u.attempt_no FROM unnest(claimed) AS u;
    RETURN QUERY
    SELECT u.id, u.job_id, u.account_id, u.channel_type, u.conversation_id, u.thread_id, u.text, u.rich_content,
           u.attachments, u.edit_of, u.attempt_no, u.series_first_attempt, u.created_at, u.provider_state,
           edits[u.ordinality], priors[u.ordinality]
    FROM unnest(claimed) WITH ORDINALITY AS u;
END
$$;
