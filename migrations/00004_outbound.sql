-- Outbound: the tenant-scoped outbox of agent replies, its append-only
-- event log (the audit trail of both state machines), token buckets
-- shared by every replica, the operators' dead-letter view and
-- mio.requeue(id).
--
-- State machines (DESIGN.md §5), each only moving forward:
--   handoff   queued(10) -> sending(20) -> handed_off(100) | dead(100),
--             compared by (attempt_no, rank): attempt_no never decreases,
--             so a retry (queued of attempt n+1) is forward of sending of
--             attempt n, and a resend or requeue starts a new series with
--             a higher attempt_no.
--   provider  unknown(0) -> accepted(10) -> delivered(50) -> read(60),
--             timed_out(90), bounced | dropped | complaint | failed(100).

-- +goose Up
SET lock_timeout = '10s';

CREATE FUNCTION mio.handoff_rank(state text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE state WHEN 'queued' THEN 10 WHEN 'sending' THEN 20 WHEN 'handed_off' THEN 100 WHEN 'dead' THEN 100 END $$;

CREATE FUNCTION mio.provider_rank(state text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE state WHEN 'unknown' THEN 0 WHEN 'accepted' THEN 10 WHEN 'delivered' THEN 50 WHEN 'read' THEN 60
                            WHEN 'timed_out' THEN 90 WHEN 'bounced' THEN 100 WHEN 'dropped' THEN 100
                            WHEN 'complaint' THEN 100 WHEN 'failed' THEN 100 END $$;

CREATE TABLE mio.outbox (
    tenant_id            uuid        NOT NULL,
    id                   uuid        NOT NULL,
    -- Accepted order: sends of one (account, conversation) lane reach the
    -- provider in seq order. A resend or requeue draws a new seq (the
    -- message goes to the back of its lane).
    seq                  bigint      GENERATED ALWAYS AS IDENTITY,
    account_id           uuid        NOT NULL,
    channel_type         text        NOT NULL,
    conversation_id      text        NOT NULL CHECK (conversation_id <> ''),
    thread_id            text        NOT NULL DEFAULT '',
    idempotency_key      text        NOT NULL CHECK (idempotency_key <> ''),
    -- sha-256 of the canonical SendCommand: a reused idempotency key with a
    -- different command is a conflict, not a duplicate.
    request_sha256       bytea       NOT NULL,
    text                 text        NOT NULL DEFAULT '',
    rich_content         jsonb,
    attachments          jsonb,
    edit_of              uuid,
    handoff_state        text        NOT NULL DEFAULT 'queued' CHECK (mio.handoff_rank(handoff_state) IS NOT NULL),
    -- Queued or sending. Indexes name active, never handoff_state, so that
    -- claiming (queued -> sending) and retrying (sending -> queued) change
    -- no indexed column and are HOT updates.
    active               boolean     GENERATED ALWAYS AS (handoff_state IN ('queued', 'sending')) STORED,
    provider_state       text        NOT NULL DEFAULT 'unknown' CHECK (mio.provider_rank(provider_state) IS NOT NULL),
    -- The current attempt, counted across series from 1; the provider
    -- idempotency key of an attempt is derived from (id, attempt_no).
    attempt_no           integer     NOT NULL DEFAULT 1 CHECK (attempt_no >= 1),
    series               integer     NOT NULL DEFAULT 1,
    series_first_attempt integer     NOT NULL DEFAULT 1,
    -- Provider calls started in the current series (429s not counted).
    attempts             integer     NOT NULL DEFAULT 0,
    next_attempt_at      timestamptz NOT NULL DEFAULT now(),
    -- While sending: until when the claimant owns the attempt; an expired
    -- lease (crash) is re-claimed for the same attempt and key.
    lease_until          timestamptz,
    -- The River job expected to dispatch this row (the sweeper enqueues a
    -- new one when it is gone).
    job_id               bigint,
    provider_message_id  text,
    -- Handed off on a channel with delivery receipts: receipts are matched
    -- to this row by provider_message_id.
    receipts             boolean     NOT NULL DEFAULT false,
    last_error           text,
    -- Set at hand-off on channels with delivery receipts: without a
    -- delivered/read receipt by then, provider_state becomes timed_out.
    receipt_due_at       timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    handed_off_at        timestamptz,
    dead_at              timestamptz,
    discarded_at         timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, idempotency_key),
    FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts (tenant_id, id),
    FOREIGN KEY (tenant_id, edit_of) REFERENCES mio.outbox (tenant_id, id)
) WITH (fillfactor = 60); -- room in each page for HOT updates
-- The active rows of each lane (ordering and the sweeper).
CREATE INDEX outbox_lane ON mio.outbox (tenant_id, account_id, conversation_id, seq) WHERE active;
-- Active rows by due time (extra rows for a dispatch job, the sweeper).
CREATE INDEX outbox_due ON mio.outbox (tenant_id, next_attempt_at) WHERE active;
CREATE INDEX outbox_provider_message ON mio.outbox (tenant_id, account_id, provider_message_id) WHERE receipts;
CREATE INDEX outbox_receipt_due ON mio.outbox (tenant_id, receipt_due_at) WHERE receipt_due_at IS NOT NULL;
CREATE INDEX outbox_dead ON mio.outbox (tenant_id, dead_at) WHERE dead_at IS NOT NULL AND discarded_at IS NULL;

-- Every transition of either state machine, and notable non-transitions
-- (rate limited, resumed after a crash), in order. Append-only: the
-- runtime role may only insert and read.
CREATE TABLE mio.outbox_events (
    tenant_id  uuid        NOT NULL,
    outbox_id  uuid        NOT NULL,
    id         bigint      GENERATED ALWAYS AS IDENTITY,
    event      text        NOT NULL,
    machine    text        NOT NULL CHECK (machine IN ('handoff', 'provider')),
    state      text        NOT NULL,
    attempt_no integer     NOT NULL,
    detail     jsonb,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, outbox_id, id)
);

-- Token buckets shared by every replica. tokens is the level at
-- updated_at; mio.rate_take refills it lazily.
CREATE TABLE mio.rate_buckets (
    tenant_id  uuid             NOT NULL,
    bucket_key text             NOT NULL,
    tokens     double precision NOT NULL,
    updated_at timestamptz      NOT NULL,
    PRIMARY KEY (tenant_id, bucket_key)
);

-- mio.rate_take takes up to p_n tokens from the bucket p_key (refilling at
-- p_rate tokens/s up to p_burst) at p_now (default: the database clock, so
-- replicas never disagree) and returns how many it granted and, when it
-- granted fewer than asked, the seconds until the next token.
-- +goose StatementBegin
CREATE FUNCTION mio.rate_take(p_tenant uuid, p_key text, p_rate double precision, p_burst double precision,
                              p_n integer, p_now timestamptz DEFAULT NULL,
                              OUT granted integer, OUT wait_seconds double precision)
    LANGUAGE plpgsql
    AS $$
DECLARE
    t_now  timestamptz := coalesce(p_now, clock_timestamp());
    level  double precision;
BEGIN
    INSERT INTO mio.rate_buckets AS b (tenant_id, bucket_key, tokens, updated_at)
    VALUES (p_tenant, p_key, p_burst, t_now)
    ON CONFLICT (tenant_id, bucket_key) DO UPDATE
        SET tokens = least(p_burst, b.tokens + p_rate * greatest(0, extract(epoch FROM t_now - b.updated_at))),
            updated_at = greatest(b.updated_at, t_now)
    RETURNING tokens INTO level;
    granted := least(p_n, floor(level + 1e-9)::integer);
    IF granted > 0 THEN
        UPDATE mio.rate_buckets SET tokens = level - granted
        WHERE tenant_id = p_tenant AND bucket_key = p_key;
    END IF;
    wait_seconds := CASE WHEN granted < p_n THEN greatest(0, 1 - (level - granted)) / p_rate ELSE 0 END;
END
$$;
-- +goose StatementEnd

ALTER TABLE mio.outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.outbox
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

ALTER TABLE mio.outbox_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.outbox_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.outbox_events
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

ALTER TABLE mio.rate_buckets ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.rate_buckets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.rate_buckets
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

REVOKE UPDATE, DELETE, TRUNCATE ON mio.outbox_events FROM mio_runtime;

-- Dead letters for operators: dead outbox rows and consumer deliveries
-- that exhausted max_deliver. security_invoker: the caller's row-level
-- security applies (set app.current_tenant_id, or be a superuser).
CREATE VIEW mio.dead_letters WITH (security_invoker = true) AS
SELECT 'outbound'::text AS kind, o.tenant_id, o.id, o.channel_type, o.account_id,
       o.attempts, o.last_error, o.created_at, o.dead_at,
       jsonb_build_object('conversation_id', o.conversation_id, 'attempt_no', o.attempt_no,
                          'series', o.series, 'idempotency_key', o.idempotency_key) AS detail
FROM mio.outbox o
WHERE o.dead_at IS NOT NULL AND o.discarded_at IS NULL AND o.handoff_state = 'dead'
UNION ALL
SELECT 'consumer'::text AS kind, d.tenant_id, d.message_id AS id, coalesce(i.channel_type, '') AS channel_type,
       coalesce(i.account_id, '00000000-0000-0000-0000-000000000000'::uuid) AS account_id,
       d.delivery_count AS attempts, d.last_error, coalesce(i.received_at, d.created_at) AS created_at,
       d.updated_at AS dead_at,
       jsonb_build_object('consumer', d.consumer_name) AS detail
FROM mio.consumer_deliveries d
LEFT JOIN mio.inbox i ON i.tenant_id = d.tenant_id AND i.id = d.message_id
WHERE d.state = 'dead';

-- mio.requeue(id) puts a dead letter back to work and returns how many
-- items it requeued (0 when id is not a dead letter, so calling it twice
-- is safe). An outbound message starts a new attempt series (new
-- attempt numbers, hence new provider idempotency keys) at the back of
-- its lane; the outbox sweeper enqueues its dispatch job within seconds.
-- A consumer's dead delivery becomes pending again with a fresh count.
-- +goose StatementBegin
CREATE FUNCTION mio.requeue(p_id uuid) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    n integer;
BEGIN
    WITH r AS (
        UPDATE mio.outbox o
        SET handoff_state = 'queued', attempt_no = o.attempt_no + 1, series = o.series + 1,
            series_first_attempt = o.attempt_no + 1, attempts = 0, next_attempt_at = now(),
            lease_until = NULL, job_id = NULL, dead_at = NULL, seq = DEFAULT, updated_at = now()
        WHERE o.id = p_id AND o.dead_at IS NOT NULL AND o.discarded_at IS NULL AND o.handoff_state = 'dead'
        RETURNING o.tenant_id, o.id, o.attempt_no
    )
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT r.tenant_id, r.id, 'requeued', 'handoff', 'queued', r.attempt_no, jsonb_build_object('by', 'mio.requeue')
    FROM r;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN n;
    END IF;
    -- A consumer's dead delivery goes back to pending with a fresh
    -- delivery count (for every consumer that dead-lettered the message).
    UPDATE mio.consumer_deliveries d
    SET state = 'pending', delivery_count = 0, available_at = now(), delivery_id = NULL,
        lease_expires_at = NULL, last_error = '', updated_at = now()
    WHERE d.message_id = p_id AND d.state = 'dead';
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- mio.discard(id) removes a dead letter from mio.dead_letters and returns
-- how many items it discarded (0 when id is not a dead letter). An
-- outbound message is kept, marked discarded, with its history; a
-- consumer's dead delivery is dropped (as an ack would).
-- +goose StatementBegin
CREATE FUNCTION mio.discard(p_id uuid) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    n integer;
BEGIN
    WITH r AS (
        UPDATE mio.outbox o SET discarded_at = now(), updated_at = now()
        WHERE o.id = p_id AND o.dead_at IS NOT NULL AND o.discarded_at IS NULL AND o.handoff_state = 'dead'
        RETURNING o.tenant_id, o.id, o.attempt_no
    )
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT r.tenant_id, r.id, 'discarded', 'handoff', 'dead', r.attempt_no, jsonb_build_object('by', 'mio.discard')
    FROM r;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN n;
    END IF;
    DELETE FROM mio.consumer_deliveries d WHERE d.message_id = p_id AND d.state = 'dead';
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- mio.dispatch_job_live reports whether River job p_job_id can still
-- dispatch its outbox row: waiting to run, or running since after
-- p_stuck_before (a job running longer belongs to a crashed process).
-- The outbox sweeper enqueues a new job for active rows without one.
-- (River's tables are created right after these migrations, hence
-- plpgsql, whose body is resolved at call time.)
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

-- mio.dispatch_claim_extras lets running dispatch jobs take over more
-- rows: it claims up to sum(p_counts) rows of p_tenant that can be sent
-- now, need no rate-limit token (their channel is one of p_unlimited and
-- their account sets no limit) and whose own dispatch job has not started
-- yet; it deletes those jobs (River never runs them), hands the rows out
-- to the jobs p_job_ids (up to p_counts[k] each, in turn), records the
-- owning job on each row, moves them to sending under a lease of
-- p_lease_seconds with their event, and returns them. Newest rows first:
-- River fetches the oldest jobs, so the two rarely meet. (plpgsql: River's
-- tables are created after these migrations.)
-- +goose StatementBegin
CREATE FUNCTION mio.dispatch_claim_extras(p_tenant uuid, p_job_ids bigint[], p_counts integer[],
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
    SELECT array_agg(c.id), array_agg(c.jid) INTO ids, jobs
    FROM (
        SELECT o.id, j.id AS jid
        FROM mio.outbox AS o
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

-- mio.outbox_keep_stats analyzes the outbox and its events when they
-- changed by more than half since their last statistics (at least 1,000
-- rows), and returns whether it did. The outbox sweeper calls it every
-- few seconds: a fresh or fast-growing outbox then never runs for long on
-- the plans of a nearly empty table (autovacuum looks once a minute).
-- SECURITY DEFINER: ANALYZE needs the owner; it does nothing else.
-- +goose StatementBegin
CREATE FUNCTION mio.outbox_keep_stats() RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog
    AS $$
DECLARE
    did boolean := false;
    r   record;
BEGIN
    FOR r IN
        SELECT s.relid, s.n_mod_since_analyze AS changed, greatest(c.reltuples, 0) AS tuples
        FROM pg_stat_user_tables AS s JOIN pg_class AS c ON c.oid = s.relid
        WHERE s.relid IN ('mio.outbox'::regclass, 'mio.outbox_events'::regclass)
    LOOP
        IF r.changed >= greatest(1000, r.tuples / 2) THEN
            EXECUTE format('ANALYZE %s', r.relid::regclass);
            did := true;
        END IF;
    END LOOP;
    RETURN did;
END
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION mio.outbox_keep_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mio.outbox_keep_stats() TO mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.outbox_keep_stats();
DROP FUNCTION IF EXISTS mio.dispatch_claim_extras(uuid, bigint[], integer[], text[], double precision);
DROP FUNCTION IF EXISTS mio.dispatch_job_live(bigint, timestamptz);
DROP FUNCTION IF EXISTS mio.discard(uuid);
DROP FUNCTION IF EXISTS mio.requeue(uuid);
DROP VIEW IF EXISTS mio.dead_letters;
DROP FUNCTION IF EXISTS mio.rate_take(uuid, text, double precision, double precision, integer, timestamptz);
DROP TABLE IF EXISTS mio.rate_buckets;
DROP TABLE IF EXISTS mio.outbox_events;
DROP TABLE IF EXISTS mio.outbox;
DROP FUNCTION IF EXISTS mio.provider_rank(text);
DROP FUNCTION IF EXISTS mio.handoff_rank(text);
