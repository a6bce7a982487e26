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
    -- by a positional primary-key probe. River's tables are not touched:
    -- the jobs the claimed and adopted rows leave are returned
    -- (prior_job_ids, on each lane's claimed row) for the caller to
    -- delete through River's client.
    SET jit = off SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
    SET enable_bitmapscan = off
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

    -- Those to be claimed here are locked and re-checked on their newest version. No
    -- lower seq can become active again (resends and requeues draw a new
    -- seq): still queued means still first. Found by the version the probe
    -- saw (a TID scan: no estimate can turn it into a scan of the tenant's
    -- outbox). A row updated since (a streamed reply's append) or held by
    -- another transaction is not claimed: it is named below, with the
    -- rows not to be claimed here.
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

    -- Named, each to get a job of its own: the rows not to be claimed here,
    -- and those that were to be but could not be locked (such a row may
    -- have been adopted, its job deleted; one another claim holds is that
    -- claim's, and the job finds it taken).
    RETURN QUERY
    SELECT h.k, false, h.id, h.acc, NULL::text, p_conversation_ids[h.k], NULL::text, NULL::text, NULL::jsonb,
           NULL::jsonb, NULL::uuid, NULL::integer, NULL::integer, NULL::integer, NULL::timestamptz, NULL::text,
           NULL::text, NULL::bigint[]
    FROM unnest(hks, hids, haccs, hclaim) AS h(k, id, acc, claim)
    WHERE NOT h.claim OR NOT (h.k = ANY (coalesce(ks, '{}')));
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
