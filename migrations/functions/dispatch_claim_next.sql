-- mio.dispatch_claim_next moves lanes on once their messages' outcomes are
-- recorded: each lane's first active row, when it is queued and due and
-- needs no rate-limit token, is claimed for the asking job; a due row
-- that needs one is only named (it gets a job of its own).

CREATE OR REPLACE FUNCTION mio.dispatch_claim_next(p_tenant uuid, p_job_ids bigint[], p_account_ids uuid[],
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
    -- by a positional primary-key probe; every statement that reads the
    -- outbox is planned for the outbox as it is now (dynamic statements:
    -- docs/architecture.md, "Planner safety"). River's tables are not
    -- touched: the jobs the claimed and adopted rows leave are returned
    -- (prior_job_ids, on each lane's claimed row) for the caller to
    -- delete through River's client.
    AS $$
#variable_conflict use_column
DECLARE
    hks    integer[];
    hids   uuid[];
    haccs  uuid[];
    htids  tid[];
    hclaim boolean[];
    c       refcursor;
    k       integer;
    seq     bigint;
    job     bigint;
    ed      text;
    r       mio.outbox;
    claimed mio.outbox[] := '{}';
    ks      integer[] := '{}';
    seqs    bigint[] := '{}';
    priors  bigint[] := '{}';
    edits   text[] := '{}';
    bks     integer[] := '{}';
    bjobs   bigint[] := '{}';
BEGIN
    -- Each lane's first active row, when it is queued and due: one descent
    -- of outbox_lane per lane (a LATERAL with LIMIT is always the inner
    -- side of the loop over the lanes), and only one.
    EXECUTE $q$
    SELECT array_agg(h.k), array_agg(h.id), array_agg(h.account_id), array_agg(h.tid), array_agg(h.claim)
    FROM unnest($2::uuid[], $3::text[]) WITH ORDINALITY AS l(acc, conv, k)
    CROSS JOIN LATERAL (
        SELECT l.k::integer AS k, o.id, o.account_id, o.ctid AS tid, o.handoff_state, o.next_attempt_at,
               ($4::boolean[])[l.k] AND o.channel_type = ANY ($5::text[])
                   AND a.rate_limit_per_sec IS NULL AND a.rate_limit_burst IS NULL AS claim
        FROM mio.outbox AS o
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        WHERE o.tenant_id = $1 AND o.account_id = l.acc AND o.conversation_id = l.conv AND o.active
        ORDER BY o.seq
        LIMIT 1
    ) AS h
    WHERE h.handoff_state = 'queued' AND h.next_attempt_at <= now()
    $q$ INTO hks, hids, haccs, htids, hclaim USING p_tenant, p_account_ids, p_conversation_ids, p_claim, p_unlimited;
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
    -- on, as for a locked one. Each is claimed on its locked version
    -- (WHERE CURRENT OF: a TID scan, whatever the statistics say).
    OPEN c NO SCROLL FOR EXECUTE $q$
    SELECT h.k, c.seq, c.job_id,
           CASE WHEN c.edit_of IS NULL THEN ''
                ELSE coalesce((SELECT CASE WHEN e.id = c.edit_of THEN e.provider_message_id END
                               FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                                     WHERE y.tenant_id = $1 AND y.id >= c.edit_of
                                     ORDER BY y.id LIMIT 1) AS e), '') END
    FROM unnest($2::integer[], $3::tid[], $4::uuid[], $5::boolean[]) AS h(k, tid, id, claim)
    CROSS JOIN LATERAL (
        SELECT o.seq, o.job_id, o.edit_of FROM mio.outbox AS o
        WHERE o.ctid = h.tid AND o.id = h.id
          AND o.handoff_state = 'queued' AND o.next_attempt_at <= now()
        FOR NO KEY UPDATE SKIP LOCKED
    ) AS c
    WHERE h.claim
    $q$ USING p_tenant, hks, htids, hids, hclaim;
    LOOP
        FETCH c INTO k, seq, job, ed;
        EXIT WHEN NOT FOUND;
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = p_job_ids[k],
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        WHERE CURRENT OF c
        RETURNING o.* INTO r;
        claimed := claimed || r;
        ks := ks || k;
        seqs := seqs || seq;
        priors := priors || CASE WHEN job IS DISTINCT FROM p_job_ids[k] THEN job END;
        edits := edits || ed;
    END LOOP;
    CLOSE c;
    IF cardinality(claimed) = 0 THEN
        RETURN;
    END IF;

    -- A job that starts draining a lane adopts the queued rows behind: it
    -- is recorded as their job (the drain is what sends them), and the
    -- jobs they leave are returned with the lane's claimed row, as the
    -- claimed row's own job is. Each is updated on the version it is
    -- found in (WHERE CURRENT OF); one another transaction holds is left
    -- alone (it is being taken by its own job, or moved on).
    OPEN c NO SCROLL FOR EXECUTE $q$
    SELECT c.k, b.job_id
    FROM unnest($3::integer[], $4::bigint[]) AS c(k, seq)
    CROSS JOIN LATERAL (
        SELECT o.job_id FROM mio.outbox AS o
        WHERE o.tenant_id = $1 AND o.account_id = ($5::uuid[])[c.k]
          AND o.conversation_id = ($6::text[])[c.k] AND o.active AND o.seq > c.seq
          AND o.handoff_state = 'queued' AND o.job_id IS DISTINCT FROM ($2::bigint[])[c.k]
        ORDER BY o.seq
        LIMIT 1000
        FOR NO KEY UPDATE SKIP LOCKED
    ) AS b
    WHERE ($7::boolean[])[c.k]
    $q$ USING p_tenant, p_job_ids, ks, seqs, p_account_ids, p_conversation_ids, p_adopt;
    LOOP
        FETCH c INTO k, job;
        EXIT WHEN NOT FOUND;
        UPDATE mio.outbox AS o SET job_id = p_job_ids[k] WHERE CURRENT OF c;
        bks := bks || k;
        bjobs := bjobs || job;
    END LOOP;
    CLOSE c;

    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
    SELECT p_tenant, u.id, 'sending', 'handoff', 'sending', u.attempt_no FROM unnest(claimed) AS u;
    RETURN QUERY
    SELECT ks[u.ordinality], true, u.id, u.account_id, u.channel_type, u.conversation_id, u.thread_id,
           u.text, u.rich_content, u.attachments, u.edit_of, u.attempt_no,
           u.series_first_attempt, u.attempts, u.created_at, u.provider_state, edits[u.ordinality],
           array_remove(array_prepend(priors[u.ordinality],
                                      ARRAY(SELECT DISTINCT b.job FROM unnest(bks, bjobs) AS b(k, job)
                                            WHERE b.k = ks[u.ordinality] AND b.job IS NOT NULL)), NULL)
    FROM unnest(claimed) WITH ORDINALITY AS u;
END
$$;
