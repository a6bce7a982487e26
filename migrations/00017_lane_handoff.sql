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
-- give it a job that runs now. A lane that is empty, whose first row is in
-- flight, locked by another claim, or waiting for its next attempt (as the
-- message just recorded is when it was not handed off but retried or
-- rate-limited) returns nothing: whoever holds that row moves the lane on. Rows
-- behind the first are never touched, so order within the lane is the
-- claim order of mio.outbox_lane. (plpgsql: River's tables are created
-- after these migrations.)
-- +goose StatementBegin
CREATE FUNCTION mio.dispatch_claim_next(p_tenant uuid, p_job_ids bigint[], p_account_ids uuid[],
                                        p_conversation_ids text[], p_claim boolean[],
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
    k    integer;
    head record;
BEGIN
    FOR k IN 1 .. coalesce(array_length(p_job_ids, 1), 0) LOOP
        -- The lane's first active row (the lane index, newest snapshot).
        SELECT o.id, o.account_id, o.handoff_state, o.next_attempt_at, o.job_id,
               o.channel_type = ANY (p_unlimited) AND a.rate_limit_per_sec IS NULL
                   AND a.rate_limit_burst IS NULL AS fast
        INTO head
        FROM mio.outbox AS o
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        WHERE o.tenant_id = p_tenant AND o.account_id = p_account_ids[k]
          AND o.conversation_id = p_conversation_ids[k] AND o.active
        ORDER BY o.seq
        LIMIT 1;
        IF NOT FOUND OR head.handoff_state <> 'queued' OR head.next_attempt_at > now() THEN
            CONTINUE;
        END IF;
        IF NOT (p_claim[k] AND head.fast) THEN
            lane := k; claimed := false; id := head.id; account_id := head.account_id;
            channel_type := NULL; conversation_id := p_conversation_ids[k]; thread_id := NULL; text := NULL;
            rich_content := NULL; attachments := NULL; edit_of := NULL; attempt_no := NULL;
            series_first_attempt := NULL; attempts := NULL; created_at := NULL; provider_state := NULL;
            edit_provider_message_id := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;
        -- Lock it, re-checked on its newest version; a row another claim
        -- holds is that claim's to send. No lower seq can become active
        -- again (resends and requeues draw a new seq): still queued means
        -- still first.
        PERFORM 1 FROM mio.outbox AS o
        WHERE o.tenant_id = p_tenant AND o.id = head.id AND o.handoff_state = 'queued'
          AND o.next_attempt_at <= now()
        FOR NO KEY UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            CONTINUE;
        END IF;
        IF head.job_id IS NOT NULL THEN
            DELETE FROM river.river_job AS j
            WHERE j.id = (SELECT jj.id FROM river.river_job AS jj
                          WHERE jj.id = head.job_id AND jj.state IN ('available', 'scheduled', 'retryable')
                          FOR UPDATE SKIP LOCKED);
        END IF;
        RETURN QUERY
        WITH upd AS (
            UPDATE mio.outbox AS o
            SET handoff_state = 'sending', attempts = o.attempts + 1, job_id = p_job_ids[k],
                lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
            WHERE o.tenant_id = p_tenant AND o.id = head.id
            RETURNING o.*
        ),
        ev AS (
            INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
            SELECT p_tenant, upd.id, 'sending', 'handoff', 'sending', upd.attempt_no FROM upd
        )
        SELECT k, true, upd.id, upd.account_id, upd.channel_type, upd.conversation_id, upd.thread_id,
               upd.text, upd.rich_content, upd.attachments, upd.edit_of, upd.attempt_no,
               upd.series_first_attempt, upd.attempts, upd.created_at, upd.provider_state,
               coalesce((SELECT orig.provider_message_id FROM mio.outbox AS orig
                         WHERE orig.tenant_id = p_tenant AND orig.id = upd.edit_of), '')
        FROM upd;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS mio.dispatch_claim_next(uuid, bigint[], uuid[], text[], boolean[], text[], double precision);
