-- +goose Up
-- The rate-limited claim finds its rows by primary key and TID, as 00034
-- made the unlimited claim do (issue 15). Every platform with a rate limit
-- (Slack, Telegram, Discord, WhatsApp, Zoho Cliq: all but the generic
-- webhook) sends through this path: the dispatcher locks the candidates,
-- takes rate-limit tokens for them, moves the granted ones to sending and
-- asks why the others could not be claimed, in one transaction
-- (workers.Dispatcher.claimLimited). Those three statements were planned
-- per call with the shapes 00034 replaced:
--   - OutboxClaimCandidates looked each id up as `tenant_id = $1 AND
--     id = $x`: an order-less equality the idempotency key's index
--     (tenant_id, …) can also serve, and a sort of the lane check;
--   - OutboxMarkSending and OutboxProbe as `tenant_id = $1 AND id = ANY
--     ($2)`: on statistics gathered before a tenant had rows (a new
--     tenant's first burst; 100k rows of a new tenant in a 10M-row outbox
--     trigger neither mio.outbox_keep_stats nor autovacuum) a bitmap scan
--     of the tenant with the ids as a filter — auto_explain caught one in
--     OutboxProbe during `mio bench dispatch --lanes 64`.
-- Each becomes a function with the plans of 00034: the positional
-- primary-key probe (`id >= $x ORDER BY id LIMIT 1`, an order only the
-- primary key gives), the lock and the update by TID (index scans off for
-- the update), the lane check through outbox_lane's order with sorts off,
-- generic plans. Results and semantics are those of the statements they
-- replace: the candidates skip rows another transaction holds (SKIP
-- LOCKED), the mark moves only rows still queued or sending.
SET lock_timeout = '10s';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_candidates(p_tenant uuid, p_ids uuid[])
    RETURNS TABLE (id uuid, account_id uuid, channel_type text, conversation_id text, thread_id text, text text,
                   rich_content jsonb, attachments jsonb, edit_of uuid, handoff_state text, attempt_no integer,
                   series_first_attempt integer, attempts integer, created_at timestamptz, provider_state text,
                   account_status text, rate_limit_per_sec double precision, rate_limit_burst integer,
                   max_attempts integer, edit_provider_message_id text)
    LANGUAGE plpgsql
    SET jit = off SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
    SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off
    AS $$
#variable_conflict use_column
BEGIN
    -- The rows that can be sent now — queued and due, or sending with an
    -- expired lease (resumed with the same attempt number) — and first of
    -- their (account, conversation) lane, locked in id order; a row
    -- another transaction holds is skipped (its holder sends it). With
    -- their account's limits and the provider id of the message an edit
    -- refers to; in lane order (seq), the order tokens are taken in.
    RETURN QUERY
    SELECT r.id, r.account_id, r.channel_type, r.conversation_id, r.thread_id, r.text, r.rich_content,
           r.attachments, r.edit_of, r.handoff_state, r.attempt_no, r.series_first_attempt, r.attempts,
           r.created_at, r.provider_state, r.status, r.rate_limit_per_sec, r.rate_limit_burst, r.max_attempts,
           CASE WHEN r.edit_of IS NULL THEN NULL
                ELSE (SELECT CASE WHEN e.id = r.edit_of THEN e.provider_message_id END
                      FROM (SELECT y.id, y.provider_message_id FROM mio.outbox AS y
                            WHERE y.tenant_id = p_tenant AND y.id >= r.edit_of
                            ORDER BY y.id LIMIT 1) AS e) END
    FROM (SELECT DISTINCT u.id FROM unnest(p_ids) AS u(id) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.ctid AS tid FROM mio.outbox AS x
        WHERE x.tenant_id = p_tenant AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS at
    CROSS JOIN LATERAL (
        SELECT o.id, o.seq, o.account_id, o.channel_type, o.conversation_id, o.thread_id, o.text, o.rich_content,
               o.attachments, o.edit_of, o.handoff_state, o.attempt_no, o.series_first_attempt, o.attempts,
               o.created_at, o.provider_state, a.status, a.rate_limit_per_sec, a.rate_limit_burst, a.max_attempts
        FROM mio.outbox AS o
        JOIN mio.accounts AS a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
        WHERE o.ctid = at.tid AND o.tenant_id = p_tenant AND o.id = i.id
          AND ((o.handoff_state = 'queued' AND o.next_attempt_at <= now())
               OR (o.handoff_state = 'sending' AND o.lease_until <= now()))
          AND (SELECT 1 FROM mio.outbox AS p
               WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
                 AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
               ORDER BY p.seq LIMIT 1) IS NULL
        FOR NO KEY UPDATE OF o SKIP LOCKED
    ) AS r
    ORDER BY r.seq;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_mark_sending(p_tenant uuid, p_ids uuid[], p_events text[], p_counts integer[],
                                          p_lease_seconds double precision)
    RETURNS TABLE (id uuid, attempt_no integer, attempts integer)
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
    -- 1. The rows, found by primary key and locked in id order (the
    --    candidates' transaction holds them already), if still queued or
    --    sending.
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
          AND o.handoff_state IN ('queued', 'sending')
        FOR NO KEY UPDATE
    ) AS r;
    IF ks IS NULL THEN
        RETURN;
    END IF;

    -- 2. Sending under a lease, on the locked versions, with their events
    --    ('sending', or 'resumed' for an attempt taken over after its
    --    lease expired; counts says whether the row starts an attempt).
    PERFORM set_config('enable_indexscan', 'off', true);
    RETURN QUERY
    WITH input AS (
        SELECT x.tid, p_events[x.k] AS event, p_counts[x.k] AS count
        FROM unnest(ks, tids) AS x(k, tid)
    ),
    upd AS (
        UPDATE mio.outbox AS o
        SET handoff_state = 'sending', attempts = o.attempts + input.count,
            lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
        FROM input
        WHERE o.ctid = input.tid AND o.tenant_id = p_tenant
        RETURNING o.id, o.attempt_no, o.attempts, input.event
    ),
    ev AS (
        INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
        SELECT p_tenant, upd.id, upd.event, 'handoff', 'sending', upd.attempt_no FROM upd
    )
    SELECT upd.id, upd.attempt_no, upd.attempts FROM upd;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.dispatch_probe(p_tenant uuid, p_ids uuid[])
    RETURNS TABLE (id uuid, account_id uuid, conversation_id text, handoff_state text,
                   next_attempt_at timestamptz, lease_until timestamptz, blocker_state text,
                   blocker_next_attempt_at timestamptz, blocker_lease_until timestamptz)
    LANGUAGE plpgsql
    SET jit = off SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
    SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off
    AS $$
#variable_conflict use_column
BEGIN
    -- Why rows were not claimed: their state, when they are due, and the
    -- state of the first active row ahead of them in their lane. Rows that
    -- do not exist are absent.
    RETURN QUERY
    SELECT o.id, o.account_id, o.conversation_id, o.handoff_state, o.next_attempt_at, o.lease_until,
           coalesce(b.handoff_state, ''), coalesce(b.next_attempt_at, o.next_attempt_at), b.lease_until
    FROM (SELECT DISTINCT u.id FROM unnest(p_ids) AS u(id) ORDER BY u.id OFFSET 0) AS i
    CROSS JOIN LATERAL (
        SELECT x.id, x.seq, x.account_id, x.conversation_id, x.handoff_state, x.next_attempt_at, x.lease_until
        FROM mio.outbox AS x
        WHERE x.tenant_id = p_tenant AND x.id >= i.id
        ORDER BY x.id
        LIMIT 1
    ) AS o
    LEFT JOIN LATERAL (
        SELECT p.handoff_state, p.next_attempt_at, p.lease_until
        FROM mio.outbox AS p
        WHERE p.tenant_id = p_tenant AND p.account_id = o.account_id
          AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
        ORDER BY p.seq
        LIMIT 1
    ) AS b ON true
    WHERE o.id = i.id;
END
$$;
-- +goose StatementEnd

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.dispatch_candidates(uuid, uuid[]);
DROP FUNCTION IF EXISTS mio.dispatch_mark_sending(uuid, uuid[], text[], integer[], double precision);
DROP FUNCTION IF EXISTS mio.dispatch_probe(uuid, uuid[]);
