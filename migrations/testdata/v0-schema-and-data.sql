-- The pre-baseline schema: a database migrated by the goose migrations that
-- preceded migrations/00001_baseline.sql (versions up to 42 recorded in
-- public.mio_schema_migrations, River's tables and migration rows in schema
-- river), with rows in every table of schema mio: a tenant with one account
-- per channel (credentials sealed with the key of 32 'k' bytes), API, admin
-- and account access tokens, inbox messages, consumers with acked, leased
-- and dead deliveries, outbox rows handed off, dead and queued with their
-- River jobs, attachments, archive, bridge and intake cursors. Frozen: the
-- upgrade tests load it into an empty database (the role mio_runtime must
-- exist) and migrate it up.
--
-- pg_dump --no-owner --column-inserts; psql's \restrict lines removed and
-- default privileges written for the loading role instead of "postgres".
--
--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: mio; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA mio;


--
-- Name: river; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA river;


--
-- Name: river_job_state; Type: TYPE; Schema: river; Owner: -
--

CREATE TYPE river.river_job_state AS ENUM (
    'available',
    'cancelled',
    'completed',
    'discarded',
    'pending',
    'retryable',
    'running',
    'scheduled'
);


--
-- Name: accounts_route(); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.accounts_route() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM mio.account_routes WHERE account_id = OLD.id AND tenant_id = OLD.tenant_id;
        RETURN OLD;
    ELSIF TG_OP = 'UPDATE' THEN
        IF NEW.id <> OLD.id OR NEW.tenant_id <> OLD.tenant_id OR NEW.channel_type <> OLD.channel_type THEN
            RAISE EXCEPTION 'account id, tenant and channel type are immutable' USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END IF;
    -- A plain insert: an account id already routed (to any tenant) is a
    -- unique violation, so no tenant can capture another's webhooks.
    INSERT INTO mio.account_routes (account_id, tenant_id, channel_type)
    VALUES (NEW.id, NEW.tenant_id, NEW.channel_type);
    RETURN NEW;
END
$$;


--
-- Name: consumer_ack(uuid, text, bigint[], integer[], uuid[]); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_ack(p_tenant uuid, p_name text, p_lease_ids bigint[], p_idxs integer[], p_ids uuid[]) RETURNS TABLE(lease_id bigint, idx integer, delivery_id uuid)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('app.current_tenant_id', p_tenant::text, true), set_config('plan_cache_mode', 'force_generic_plan', true);
    IF cardinality(p_lease_ids) > 0 THEN
        PERFORM count(pg_advisory_xact_lock(1835626348, (s.id % 2147483647)::int))
        FROM (SELECT DISTINCT u.id FROM unnest(p_lease_ids) AS u (id) ORDER BY u.id OFFSET 0) AS s;
        RETURN QUERY
        WITH req AS (
            SELECT DISTINCT u.lease_id, u.idx
            FROM (SELECT unnest(p_lease_ids) AS lease_id, unnest(p_idxs) AS idx) AS u
        ),
        ids AS MATERIALIZED (
            SELECT DISTINCT u.id FROM unnest(p_lease_ids) AS u (id)
        ),
        l AS MATERIALIZED (
            SELECT r.id, r.n FROM ids CROSS JOIN LATERAL (
                SELECT x.id, cardinality(x.message_ids) AS n FROM mio.consumer_leases AS x
                WHERE x.tenant_id = p_tenant AND x.consumer_name = p_name AND x.id = ids.id
                OFFSET 0
            ) AS r
        ),
        done AS MATERIALIZED (
            SELECT s.lease_id, x.idx FROM ids CROSS JOIN LATERAL (
                SELECT y.lease_id, y.idxs FROM mio.consumer_settles AS y
                WHERE y.tenant_id = p_tenant AND y.consumer_name = p_name AND y.lease_id = ids.id
                OFFSET 0
            ) AS s CROSS JOIN LATERAL unnest(s.idxs) AS x (idx)
        ),
        hit AS (
            SELECT req.lease_id, req.idx
            FROM req JOIN l ON l.id = req.lease_id
            WHERE req.idx >= 0 AND req.idx < l.n
              AND NOT EXISTS (SELECT 1 FROM done WHERE done.lease_id = req.lease_id AND done.idx = req.idx)
        ),
        ins AS (
            INSERT INTO mio.consumer_settles (tenant_id, consumer_name, gen, lease_id, idxs)
            SELECT p_tenant, p_name, (SELECT gen FROM mio.consumer_log_gen), hit.lease_id, array_agg(hit.idx)
            FROM hit GROUP BY hit.lease_id
        )
        SELECT hit.lease_id::bigint, hit.idx::int, NULL::uuid FROM hit;
    END IF;
    RETURN QUERY
        DELETE FROM mio.consumer_deliveries AS d
        WHERE d.tenant_id = p_tenant AND d.consumer_name = p_name AND d.state = 'leased'
          AND d.delivery_id = ANY (p_ids)
        RETURNING NULL::bigint, NULL::int, d.delivery_id;
END
$$;


--
-- Name: consumer_base_at_create(uuid, text, text, text[], uuid[], text[], timestamp with time zone); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_base_at_create(p_tenant uuid, p_stage text, p_deliver_policy text, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone) RETURNS bigint
    LANGUAGE sql STABLE
    AS $$
SELECT CASE
    WHEN mio.consumer_counts_rows(p_conversation_ids, p_start_time, now()) OR p_deliver_policy = 'all' THEN 0
    WHEN p_deliver_policy = 'new' THEN mio.stream_appended(p_tenant, p_stage, p_channel_types, p_account_ids)
    ELSE mio.stream_appended(p_tenant, p_stage, p_channel_types, p_account_ids) - (
        SELECT count(*) FROM mio.inbox AS i
        WHERE i.tenant_id = p_tenant AND i.received_at >= p_start_time
          AND (p_stage = 'received' OR i.ready_xid IS NOT NULL)
          AND (cardinality(coalesce(p_channel_types, '{}')) = 0 OR i.channel_type = ANY (p_channel_types))
          AND (cardinality(coalesce(p_account_ids, '{}')) = 0 OR i.account_id = ANY (p_account_ids)))
END
$$;


--
-- Name: consumer_counts_rows(text[], timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_counts_rows(p_conversation_ids text[], p_start_time timestamp with time zone, p_created_at timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT cardinality(coalesce(p_conversation_ids, '{}')) > 0
       OR (p_start_time IS NOT NULL AND p_start_time > p_created_at - interval '5 minutes')
$$;


--
-- Name: consumer_ids_guard(); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_ids_guard() RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF (SELECT e.started_at FROM mio.consumer_id_epoch AS e) = pg_postmaster_start_time() THEN
        RETURN false;
    END IF;
    -- The first pull after a (re)start: one of them moves the ids ahead;
    -- the others wait for its row lock, then find the epoch current.
    UPDATE mio.consumer_id_epoch SET started_at = pg_postmaster_start_time()
    WHERE started_at IS DISTINCT FROM pg_postmaster_start_time();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM setval('mio.consumer_take_ids', nextval('mio.consumer_take_ids') + 1000000);
    RETURN true;
END
$$;


--
-- Name: consumer_pull_state(uuid, text); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_pull_state(p_tenant uuid, p_name text) RETURNS TABLE(leased bigint, due boolean, ranges boolean, ranges_expired boolean, swept bigint, hi text)
    LANGUAGE plpgsql STABLE
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    RETURN QUERY
    WITH c AS MATERIALIZED (
        SELECT s.swept, s.log_hi FROM mio.consumer_state AS s WHERE s.tenant_id = p_tenant AND s.name = p_name
    ),
    rr AS MATERIALIZED (
        SELECT r.id, r.expires_at, cardinality(r.message_ids) AS n
        FROM mio.consumer_leases AS r
        WHERE r.tenant_id = p_tenant AND r.consumer_name = p_name AND r.id > (SELECT c.swept FROM c)
    ),
    st AS MATERIALIZED (
        SELECT x.lease_id, sum(cardinality(x.idxs)) AS settled
        FROM mio.consumer_settles AS x
        WHERE x.tenant_id = p_tenant AND x.consumer_name = p_name AND x.lease_id > (SELECT c.swept FROM c)
        GROUP BY x.lease_id
    ),
    r AS MATERIALIZED (
        SELECT rr.id, rr.expires_at, rr.n - coalesce(st.settled, 0) AS outstanding
        FROM rr LEFT JOIN st ON st.lease_id = rr.id
    )
    SELECT
        ((SELECT count(*) FROM mio.consumer_deliveries AS l
          WHERE l.tenant_id = p_tenant AND l.consumer_name = p_name AND l.state = 'leased' AND l.lease_expires_at > now())
         + (SELECT coalesce(sum(r.outstanding), 0) FROM r WHERE r.expires_at > now()))::bigint,
        (EXISTS (SELECT 1 FROM mio.consumer_deliveries AS p
                 WHERE p.tenant_id = p_tenant AND p.consumer_name = p_name AND p.state = 'pending' AND p.available_at <= now())
         OR EXISTS (SELECT 1 FROM mio.consumer_deliveries AS e
                    WHERE e.tenant_id = p_tenant AND e.consumer_name = p_name AND e.state = 'leased' AND e.lease_expires_at <= now())),
        EXISTS (SELECT 1 FROM r WHERE r.outstanding > 0),
        EXISTS (SELECT 1 FROM r WHERE r.outstanding > 0 AND r.expires_at <= now()),
        coalesce((SELECT min(r.id) - 1 FROM r WHERE r.outstanding > 0), (SELECT max(r.id) FROM r), (SELECT c.swept FROM c))::bigint,
        coalesce((SELECT c.log_hi FROM c), pg_current_snapshot())::text;
END
$$;


--
-- Name: consumer_pull_steady(uuid, text, integer); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_pull_steady(p_tenant uuid, p_name text, p_max integer) RETURNS TABLE(status text, id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
    LANGUAGE plpgsql
    AS $$
DECLARE
    c record;
    st record;
    room bigint;
BEGIN
    PERFORM set_config('app.current_tenant_id', p_tenant::text, true), set_config('synchronous_commit', 'off', true),
            set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_bitmapscan', 'off', true);
    PERFORM mio.consumer_ids_guard();
    PERFORM 1 FROM mio.consumers AS k WHERE k.tenant_id = p_tenant AND k.name = p_name FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::uuid, NULL::xid8, NULL::bigint, NULL::bigint, NULL::jsonb, NULL::bytea, NULL::bigint;
        RETURN;
    END IF;
    SELECT s.ordering, s.stage, s.max_ack_pending, s.ack_wait_ms, s.log_lo, s.cursor_xid, s.cursor_seq, s.swept,
           s.filter_channel_types, s.filter_account_ids, s.filter_conversation_ids, s.start_time,
           s.last_delivered_at, coalesce(s.position_written_at, 'epoch') AS position_written_at, s.taken
    INTO c
    FROM mio.consumer_state AS s WHERE s.tenant_id = p_tenant AND s.name = p_name;
    IF NOT FOUND OR c.ordering <> 'none' OR c.stage <> 'ready' THEN
        RETURN QUERY SELECT 'ordered'::text, NULL::uuid, NULL::xid8, NULL::bigint, NULL::bigint, NULL::jsonb, NULL::bytea, NULL::bigint;
        RETURN;
    END IF;
    SELECT * INTO st FROM mio.consumer_pull_state(p_tenant, p_name);
    IF st.due OR st.ranges_expired THEN
        RETURN QUERY SELECT 'due'::text, NULL::uuid, NULL::xid8, NULL::bigint, NULL::bigint, NULL::jsonb, NULL::bytea, NULL::bigint;
        RETURN;
    END IF;
    room := least(p_max, c.max_ack_pending - st.leased);
    IF room <= 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT 'taken'::text, t.id, t.xid, t.seq, t.message_seq, t.envelope, t.raw, t.lease_id
    FROM mio.consumer_take_ready(p_tenant, c.log_lo, st.hi::pg_snapshot, c.cursor_xid, c.cursor_seq,
        coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'), coalesce(c.filter_conversation_ids, '{}'),
        c.start_time, room::int, p_name, make_interval(secs => c.ack_wait_ms / 1000.0), st.swept, false,
        c.last_delivered_at, c.swept <> st.swept OR now() - c.position_written_at > interval '1 second', c.taken) AS t;
END
$$;


--
-- Name: consumer_rebase(uuid, text); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_rebase(p_tenant uuid, p_name text) RETURNS bigint
    LANGUAGE sql
    AS $$
UPDATE mio.consumers AS c
SET backlog_base = CASE WHEN mio.consumer_counts_rows(s.filter_conversation_ids, s.start_time, s.created_at) THEN 0
    ELSE mio.stream_appended(s.tenant_id, s.stage, s.filter_channel_types, s.filter_account_ids) - s.taken
         - mio.consumer_untaken_rows(s.tenant_id, s.stage, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq,
                                     s.filter_channel_types, s.filter_account_ids, s.filter_conversation_ids, s.start_time)
    END
FROM mio.consumer_state AS s
WHERE c.tenant_id = p_tenant AND c.name = p_name AND s.tenant_id = p_tenant AND s.name = p_name
RETURNING c.backlog_base
$$;


--
-- Name: consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[], timestamp with time zone, integer, text, interval, bigint, boolean, timestamp with time zone, boolean); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean) RETURNS TABLE(id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
    LANGUAGE sql
    AS $$
SELECT * FROM mio.consumer_take_ready(p_tenant, p_lo, p_hi, p_cursor_xid, p_cursor_seq, p_channel_types, p_account_ids,
    p_conversation_ids, p_start_time, p_max, p_name, p_ack_wait, p_swept, p_delivered, p_last_delivered_at, p_persist,
    (SELECT s.taken FROM mio.consumer_state AS s WHERE s.tenant_id = p_tenant AND s.name = p_name))
$$;


--
-- Name: consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[], timestamp with time zone, integer, text, interval, bigint, boolean, timestamp with time zone, boolean, bigint); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean, p_taken bigint) RETURNS TABLE(id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
    LANGUAGE plpgsql
    AS $$
BEGIN
    RETURN QUERY
    WITH s AS (
        SELECT i.id, i.ready_xid AS xid, i.ready_seq AS seq, i.seq AS message_seq, i.envelope, i.raw
        FROM mio.log_ready(p_tenant, p_lo, p_hi, p_cursor_xid, p_cursor_seq,
            p_channel_types, p_account_ids, p_conversation_ids, p_start_time, p_max) AS i
    ),
    g AS (SELECT lg.gen FROM mio.consumer_log_gen AS lg),
    l AS (
        INSERT INTO mio.consumer_leases AS cl (tenant_id, consumer_name, gen, id, message_ids, expires_at)
        SELECT p_tenant, p_name, (SELECT g.gen FROM g), nextval('mio.consumer_take_ids'),
               array_agg(s.id ORDER BY s.xid, s.seq), now() + p_ack_wait
        FROM s
        HAVING count(*) > 0
        RETURNING cl.id
    ),
    k AS (
        SELECT count(*) AS n,
               (array_agg(s.xid ORDER BY s.xid DESC, s.seq DESC))[1] AS last_xid,
               (array_agg(s.seq ORDER BY s.xid DESC, s.seq DESC))[1] AS last_seq
        FROM s
    ),
    -- The new position: when fewer rows than asked came back, the window
    -- (p_lo, p_hi] has been read to its end and p_hi becomes lo (no window
    -- open); otherwise the window stays open at p_hi, read up to the last row.
    nc AS (
        SELECT k.n,
               CASE WHEN k.n < p_max THEN p_hi ELSE p_lo END AS lo,
               CASE WHEN k.n < p_max THEN NULL ELSE p_hi END AS hi,
               CASE WHEN k.n < p_max THEN '0'::xid8 ELSE k.last_xid END AS xid,
               CASE WHEN k.n < p_max THEN 0::bigint ELSE k.last_seq END AS seq
        FROM k
    ),
    adv AS (
        INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at, taken)
        SELECT p_tenant, p_name, (SELECT g.gen FROM g), nc.lo, nc.hi, nc.xid, nc.seq,
               p_swept, CASE WHEN nc.n > 0 OR p_delivered THEN now() ELSE p_last_delivered_at END, p_taken + nc.n
        FROM nc
        WHERE nc.n > 0 OR p_delivered OR p_persist
    )
    SELECT s.id, s.xid, s.seq, s.message_seq, s.envelope, s.raw, l.id
    FROM s CROSS JOIN l
    ORDER BY s.xid, s.seq;
END
$$;


--
-- Name: consumer_untaken_rows(uuid, text, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[], timestamp with time zone); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.consumer_untaken_rows(p_tenant uuid, p_stage text, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone) RETURNS bigint
    LANGUAGE sql STABLE
    AS $$
SELECT (SELECT count(*) FROM mio.log_ready(p_tenant, p_lo, coalesce(p_hi, pg_current_snapshot()), p_cursor_xid, p_cursor_seq,
            coalesce(p_channel_types, '{}'), coalesce(p_account_ids, '{}'), coalesce(p_conversation_ids, '{}'), p_start_time, NULL)
        WHERE p_stage = 'ready')
     + (SELECT count(*) FROM mio.log_ready(p_tenant, p_hi, pg_current_snapshot(), '0', 0,
            coalesce(p_channel_types, '{}'), coalesce(p_account_ids, '{}'), coalesce(p_conversation_ids, '{}'), p_start_time, NULL)
        WHERE p_stage = 'ready' AND p_hi IS NOT NULL)
     + (SELECT count(*) FROM mio.log_received(p_tenant, p_lo, coalesce(p_hi, pg_current_snapshot()), p_cursor_xid, p_cursor_seq,
            coalesce(p_channel_types, '{}'), coalesce(p_account_ids, '{}'), coalesce(p_conversation_ids, '{}'), p_start_time, NULL)
        WHERE p_stage = 'received')
     + (SELECT count(*) FROM mio.log_received(p_tenant, p_hi, pg_current_snapshot(), '0', 0,
            coalesce(p_channel_types, '{}'), coalesce(p_account_ids, '{}'), coalesce(p_conversation_ids, '{}'), p_start_time, NULL)
        WHERE p_stage = 'received' AND p_hi IS NOT NULL)
$$;


--
-- Name: consumers_rebase(); Type: PROCEDURE; Schema: mio; Owner: -
--

CREATE PROCEDURE mio.consumers_rebase()
    LANGUAGE plpgsql
    AS $$
DECLARE
    t uuid;
    names text[];
    n text;
BEGIN
    FOR t IN SELECT x.id FROM mio.tenants AS x ORDER BY x.id LOOP
        PERFORM set_config('app.current_tenant_id', t::text, true);
        SELECT coalesce(array_agg(c.name ORDER BY c.name), '{}') INTO names FROM mio.consumers AS c WHERE c.tenant_id = t;
        COMMIT;
        FOREACH n IN ARRAY names LOOP
            PERFORM set_config('app.current_tenant_id', t::text, true);
            PERFORM 1 FROM mio.consumers AS c WHERE c.tenant_id = t AND c.name = n FOR NO KEY UPDATE;
            PERFORM mio.consumer_rebase(t, n);
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;


--
-- Name: current_tenant_id(); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.current_tenant_id() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('app.current_tenant_id', true), '')::uuid $$;


--
-- Name: discard(uuid); Type: FUNCTION; Schema: mio; Owner: -
--

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


--
-- Name: dispatch_candidates(uuid, uuid[]); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_candidates(p_tenant uuid, p_ids uuid[]) RETURNS TABLE(id uuid, account_id uuid, channel_type text, conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid, handoff_state text, attempt_no integer, series_first_attempt integer, attempts integer, created_at timestamp with time zone, provider_state text, account_status text, rate_limit_per_sec double precision, rate_limit_burst integer, max_attempts integer, edit_provider_message_id text)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_sort TO 'off'
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


--
-- Name: dispatch_claim(uuid, uuid[], double precision); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_claim(p_tenant uuid, p_ids uuid[], p_lease_seconds double precision) RETURNS TABLE(id uuid, account_id uuid, channel_type text, conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid, prior_state text, attempt_no integer, series_first_attempt integer, attempts integer, created_at timestamp with time zone, provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_sort TO 'off'
    SET enable_indexscan TO 'on'
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


--
-- Name: dispatch_claim_extras(uuid, bigint[], integer[], text[], double precision); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_claim_extras(p_tenant uuid, p_job_ids bigint[], p_counts integer[], p_unlimited text[], p_lease_seconds double precision) RETURNS TABLE(id uuid, job_id bigint, account_id uuid, channel_type text, conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid, attempt_no integer, series_first_attempt integer, created_at timestamp with time zone, provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    SET enable_sort TO 'off'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_material TO 'off'
    SET enable_indexscan TO 'on'
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


--
-- Name: dispatch_claim_next(uuid, bigint[], uuid[], text[], boolean[], boolean[], text[], double precision); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_claim_next(p_tenant uuid, p_job_ids bigint[], p_account_ids uuid[], p_conversation_ids text[], p_claim boolean[], p_adopt boolean[], p_unlimited text[], p_lease_seconds double precision) RETURNS TABLE(lane integer, claimed boolean, id uuid, account_id uuid, channel_type text, conversation_id text, thread_id text, text text, rich_content jsonb, attachments jsonb, edit_of uuid, attempt_no integer, series_first_attempt integer, attempts integer, created_at timestamp with time zone, provider_state text, edit_provider_message_id text)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_sort TO 'off'
    SET enable_indexscan TO 'on'
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


--
-- Name: dispatch_finish(uuid, uuid[], integer[], text[], text[], text[], bigint[], bigint[], text[], boolean[]); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_finish(p_tenant uuid, p_ids uuid[], p_attempt_nos integer[], p_outcomes text[], p_provider_message_ids text[], p_errors text[], p_delays_ms bigint[], p_receipt_timeouts_ms bigint[], p_details text[], p_accepts boolean[]) RETURNS TABLE(id uuid, attempt_no integer, handoff_state text, outcome text)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_sort TO 'off'
    SET enable_indexscan TO 'on'
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


--
-- Name: dispatch_job_live(bigint, timestamp with time zone); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_job_live(p_job_id bigint, p_stuck_before timestamp with time zone) RETURNS boolean
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


--
-- Name: dispatch_job_row(bigint); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_job_row(p_job_id bigint) RETURNS uuid
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN (SELECT (j.args ->> 'outbox_id')::uuid FROM river.river_job AS j WHERE j.id = p_job_id);
END
$$;


--
-- Name: dispatch_mark_sending(uuid, uuid[], text[], integer[], double precision); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_mark_sending(p_tenant uuid, p_ids uuid[], p_events text[], p_counts integer[], p_lease_seconds double precision) RETURNS TABLE(id uuid, attempt_no integer, attempts integer)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_sort TO 'off'
    SET enable_indexscan TO 'on'
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


--
-- Name: dispatch_probe(uuid, uuid[]); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.dispatch_probe(p_tenant uuid, p_ids uuid[]) RETURNS TABLE(id uuid, account_id uuid, conversation_id text, handoff_state text, next_attempt_at timestamp with time zone, lease_until timestamp with time zone, blocker_state text, blocker_next_attempt_at timestamp with time zone, blocker_lease_until timestamp with time zone)
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_sort TO 'off'
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


--
-- Name: handoff_rank(text); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.handoff_rank(state text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE state WHEN 'queued' THEN 10 WHEN 'sending' THEN 20 WHEN 'handed_off' THEN 100 WHEN 'dead' THEN 100 END $$;


--
-- Name: inbox_partition_retire(timestamp with time zone); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.inbox_partition_retire(p_before timestamp with time zone) RETURNS TABLE(partition_name text, messages bigint, blobs_released bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    SET lock_timeout TO '200ms'
    AS $_$
DECLARE
    part text;
    day date;
    lo uuid;
    hi uuid;
    t uuid;
    cur record;
    blocked boolean;
    released bigint := 0;
    n bigint;
    u bigint;
    k record;
BEGIN
    SELECT c.relname, to_date(substr(c.relname, 8), 'YYYYMMDD') INTO part, day
    FROM pg_inherits AS h JOIN pg_class AS c ON c.oid = h.inhrelid
    WHERE h.inhparent = 'mio.inbox'::regclass AND c.relname ~ '^inbox_p[0-9]{8}$'
      AND (to_date(substr(c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC' <= least(p_before, now())
    ORDER BY 2
    LIMIT 1;
    IF part IS NULL THEN
        RETURN;
    END IF;
    lo := mio.uuid_time_floor(day::timestamp AT TIME ZONE 'UTC');
    hi := mio.uuid_time_floor((day + 1)::timestamp AT TIME ZONE 'UTC');
    -- Row-level security applies to the owner too (FORCE): look tenant by
    -- tenant, each through its own setting.
    FOR t IN SELECT id FROM mio.tenants LOOP
        PERFORM set_config('app.current_tenant_id', t::text, true);
        cur := NULL;
        SELECT c.log_lo, c.log_hi, c.ready_xid, c.ready_seq INTO cur FROM mio.archive_cursors AS c WHERE c.tenant_id = t;
        -- Unread rows: only those at or above the position's xmin can be
        -- (an index range on the ready stream).
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM mio.%I WHERE tenant_id = $1 AND ready_xid IS NULL)'
                       ' OR EXISTS (SELECT 1 FROM mio.%I AS i WHERE i.tenant_id = $1 AND i.ready_xid IS NOT NULL'
                       '            AND ($2::pg_snapshot IS NULL OR (i.ready_xid >= pg_snapshot_xmin($2)'
                       '                 AND NOT mio.log_read(i.ready_xid, i.ready_seq, $2, $3, $4, $5))))', part, part)
            INTO blocked USING t, cur.log_lo, cur.log_hi, cur.ready_xid, cur.ready_seq;
        IF blocked THEN
            PERFORM set_config('app.current_tenant_id', '', true);
            RETURN;
        END IF;
    END LOOP;
    FOR t IN SELECT id FROM mio.tenants LOOP
        PERFORM set_config('app.current_tenant_id', t::text, true);
        -- A consumer that has not read every row of the day counts the
        -- unread ones it would have taken in its base (migration 00040):
        -- under its pull lock, with its position read by a later statement.
        PERFORM 1 FROM mio.consumers AS x WHERE x.tenant_id = t ORDER BY x.name FOR NO KEY UPDATE;
        FOR k IN SELECT s.name, s.stage, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq, s.start_time,
                        coalesce(s.filter_channel_types, '{}') AS channel_types, coalesce(s.filter_account_ids, '{}') AS account_ids,
                        coalesce(s.filter_conversation_ids, '{}') AS conversation_ids
                 FROM mio.consumer_state AS s WHERE s.tenant_id = t LOOP
            EXECUTE format('SELECT count(*) FROM mio.%1$I AS i WHERE i.tenant_id = $1 AND i.%2$I >= pg_snapshot_xmin($2)'
                           ' AND NOT mio.log_read(i.%2$I, i.%3$I, $2, $3, $4, $5)'
                           ' AND (cardinality($7::text[]) = 0 OR i.channel_type = ANY ($7))'
                           ' AND (cardinality($8::uuid[]) = 0 OR i.account_id = ANY ($8))'
                           ' AND (cardinality($9::text[]) = 0 OR i.conversation_id = ANY ($9))'
                           ' AND ($6::timestamptz IS NULL OR i.received_at >= $6)',
                           part, CASE WHEN k.stage = 'ready' THEN 'ready_xid' ELSE 'xid' END,
                           CASE WHEN k.stage = 'ready' THEN 'ready_seq' ELSE 'seq' END)
                INTO u USING t, k.log_lo, k.log_hi, k.cursor_xid, k.cursor_seq, k.start_time,
                             k.channel_types, k.account_ids, k.conversation_ids;
            IF u > 0 THEN
                UPDATE mio.consumers AS x SET backlog_base = x.backlog_base + u WHERE x.tenant_id = t AND x.name = k.name;
            END IF;
        END LOOP;
        WITH gone AS (
            DELETE FROM mio.attachments AS a
            WHERE a.tenant_id = t AND a.message_id >= lo AND a.message_id < hi
            RETURNING a.content_sha256
        ), rel AS (
            SELECT g.content_sha256, count(*) AS k FROM gone AS g
            WHERE g.content_sha256 IS NOT NULL GROUP BY g.content_sha256
        ), unref AS (
            UPDATE mio.media_blobs AS b
            SET refs = greatest(b.refs - r.k, 0),
                unreferenced_since = CASE WHEN b.refs - r.k <= 0 THEN now() ELSE b.unreferenced_since END
            FROM rel AS r WHERE b.content_sha256 = r.content_sha256
            RETURNING 1
        )
        SELECT count(*) INTO n FROM unref;
        released := released + n;
    END LOOP;
    PERFORM set_config('app.current_tenant_id', '', true);
    SELECT greatest(c.reltuples, 0)::bigint INTO n FROM pg_class AS c WHERE c.oid = ('mio.' || quote_ident(part))::regclass;
    EXECUTE format('ALTER TABLE mio.inbox DETACH PARTITION mio.%I', part);
    EXECUTE format('DROP TABLE mio.%I', part);
    partition_name := part;
    messages := n;
    blobs_released := released;
    RETURN NEXT;
END
$_$;


--
-- Name: inbox_partition_secure(text); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.inbox_partition_secure(p_name text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
BEGIN
    EXECUTE format('ALTER TABLE mio.%I ENABLE ROW LEVEL SECURITY', p_name);
    EXECUTE format('ALTER TABLE mio.%I FORCE ROW LEVEL SECURITY', p_name);
    EXECUTE format('CREATE POLICY tenant_isolation ON mio.%I USING (tenant_id = mio.current_tenant_id())'
                   ' WITH CHECK (tenant_id = mio.current_tenant_id())', p_name);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON mio.%I TO mio_runtime', p_name);
END
$$;


--
-- Name: inbox_partitions_ensure(date, date); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.inbox_partitions_ensure(p_from date, p_to date) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    SET lock_timeout TO '500ms'
    AS $$
DECLARE
    d date;
    n integer := 0;
    name text;
BEGIN
    IF p_to - p_from > 400 THEN
        RAISE EXCEPTION 'inbox partitions: % to % is more than 400 days', p_from, p_to;
    END IF;
    d := p_from;
    WHILE d <= p_to LOOP
        name := 'inbox_p' || to_char(d, 'YYYYMMDD');
        IF to_regclass('mio.' || name) IS NULL THEN
            EXECUTE format('CREATE TABLE mio.%I PARTITION OF mio.inbox FOR VALUES FROM (%L) TO (%L)', name,
                           mio.uuid_time_floor(d::timestamp AT TIME ZONE 'UTC'),
                           mio.uuid_time_floor((d + 1)::timestamp AT TIME ZONE 'UTC'));
            PERFORM mio.inbox_partition_secure(name);
            n := n + 1;
        END IF;
        d := d + 1;
    END LOOP;
    RETURN n;
END
$$;


--
-- Name: inbox_rebind(regclass); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.inbox_rebind(p_old regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
DECLARE
    r record;
    def text;
    saved text[] := '{}';
    fns oid[];
BEGIN
    -- Views reading the table: CREATE OR REPLACE VIEW resets the options
    -- it is not given (security_invoker), so they are given again.
    FOR r IN SELECT DISTINCT v.oid::regclass::text AS view, v.reloptions
             FROM pg_depend AS d JOIN pg_rewrite AS w ON w.oid = d.objid JOIN pg_class AS v ON v.oid = w.ev_class
             WHERE d.refobjid = p_old AND v.oid <> p_old LOOP
        def := replace(pg_get_viewdef(r.view::regclass), p_old::text, 'mio.inbox');
        EXECUTE format('CREATE OR REPLACE VIEW %s%s AS %s', r.view,
                       CASE WHEN r.reloptions IS NULL THEN '' ELSE ' WITH (' || array_to_string(r.reloptions, ', ') || ')' END, def);
    END LOOP;
    -- Functions returning its rows (mio.log_ready, mio.log_received) are
    -- dropped and created again; the views calling them (mio.queue_health)
    -- are saved, dropped, and created again after them.
    SELECT array_agg(p.oid) INTO fns FROM pg_proc AS p
    WHERE p.prorettype = (SELECT reltype FROM pg_class WHERE oid = p_old);
    FOR r IN SELECT DISTINCT v.oid::regclass::text AS view, v.reloptions
             FROM pg_depend AS d JOIN pg_rewrite AS w ON w.oid = d.objid JOIN pg_class AS v ON v.oid = w.ev_class
             WHERE d.refobjid = ANY (fns) LOOP
        saved := saved || format('CREATE VIEW %s%s AS %s', r.view,
            CASE WHEN r.reloptions IS NULL THEN '' ELSE ' WITH (' || array_to_string(r.reloptions, ', ') || ')' END,
            pg_get_viewdef(r.view::regclass));
        EXECUTE format('DROP VIEW %s', r.view);
    END LOOP;
    FOR r IN SELECT unnest(fns) AS oid LOOP
        def := replace(pg_get_functiondef(r.oid), p_old::text, 'mio.inbox');
        EXECUTE format('DROP FUNCTION %s', r.oid::regprocedure);
        EXECUTE def;
    END LOOP;
    FOR i IN 1 .. cardinality(saved) LOOP
        EXECUTE saved[i];
    END LOOP;
END
$$;


--
-- Name: lease_delivery_id(bigint, integer); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.lease_delivery_id(lease_id bigint, idx integer) RETURNS uuid
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT (lpad(to_hex(lease_id), 12, '0') || '8' || lpad(to_hex(idx), 3, '0') || '80006d696f6c7365')::uuid $$;


--
-- Name: log_ended(pg_snapshot, pg_snapshot); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.log_ended(lo pg_snapshot, hi pg_snapshot) RETURNS xid8[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(array_agg(x), '{}') FROM pg_snapshot_xip(lo) AS x WHERE pg_visible_in_snapshot(x, hi) $$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: outbox_events; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.outbox_events (
    tenant_id uuid NOT NULL,
    outbox_id uuid NOT NULL,
    id bigint NOT NULL,
    event text NOT NULL,
    machine text NOT NULL,
    state text NOT NULL,
    attempt_no integer NOT NULL,
    detail jsonb,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    CONSTRAINT outbox_events_machine_check CHECK ((machine = ANY (ARRAY['handoff'::text, 'provider'::text])))
);
ALTER TABLE ONLY mio.outbox_events ALTER COLUMN detail SET COMPRESSION lz4;

ALTER TABLE ONLY mio.outbox_events FORCE ROW LEVEL SECURITY;


--
-- Name: log_outbox_events(uuid, pg_snapshot, pg_snapshot, xid8, bigint, integer); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.log_outbox_events(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint, p_max integer) RETURNS SETOF mio.outbox_events
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT o.* FROM mio.outbox_events AS o
         WHERE o.tenant_id = p_tenant
           AND o.xid = x.xid
           AND (o.xid, o.id) > (p_after_xid, p_after_seq)
         ORDER BY o.id
         LIMIT p_max
     ) AS e
     ORDER BY e.xid, e.id
     LIMIT p_max)
    UNION ALL
    (SELECT o.* FROM mio.outbox_events AS o
     WHERE o.tenant_id = p_tenant
       AND (o.xid, o.id) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                            CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND o.xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(o.xid, p_hi)
     ORDER BY o.xid, o.id
     LIMIT p_max)
) AS w
ORDER BY w.xid, w.id
LIMIT p_max
$$;


--
-- Name: log_read(xid8, bigint, pg_snapshot, pg_snapshot, xid8, bigint); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.log_read(xid xid8, seq bigint, lo pg_snapshot, hi pg_snapshot, after_xid xid8, after_seq bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT pg_visible_in_snapshot(xid, lo)
          OR (hi IS NOT NULL AND pg_visible_in_snapshot(xid, hi) AND (xid, seq) <= (after_xid, after_seq)) $$;


--
-- Name: inbox; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint,
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
)
PARTITION BY RANGE (id);
ALTER TABLE ONLY mio.inbox ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox FORCE ROW LEVEL SECURITY;


--
-- Name: log_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[], timestamp with time zone, integer); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.log_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer) RETURNS SETOF mio.inbox
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT i.* FROM mio.inbox AS i
         WHERE i.tenant_id = p_tenant
           AND i.ready_xid = x.xid
           AND (i.ready_xid, i.ready_seq) > (p_after_xid, p_after_seq)
           AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
           AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
           AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
           AND (p_start_time IS NULL OR i.received_at >= p_start_time)
         ORDER BY i.ready_seq
         LIMIT p_max
     ) AS e
     ORDER BY e.ready_xid, e.ready_seq
     LIMIT p_max)
    UNION ALL
    (SELECT i.* FROM mio.inbox AS i
     WHERE i.tenant_id = p_tenant
       AND (i.ready_xid, i.ready_seq) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                                  CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND i.ready_xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(i.ready_xid, p_hi)
       AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
       AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
       AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
       AND (p_start_time IS NULL OR i.received_at >= p_start_time)
     ORDER BY i.ready_xid, i.ready_seq
     LIMIT p_max)
) AS w
ORDER BY w.ready_xid, w.ready_seq
LIMIT p_max
$$;


--
-- Name: log_received(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[], timestamp with time zone, integer); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.log_received(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer) RETURNS SETOF mio.inbox
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT i.* FROM mio.inbox AS i
         WHERE i.tenant_id = p_tenant
           AND i.xid = x.xid
           AND (i.xid, i.seq) > (p_after_xid, p_after_seq)
           AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
           AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
           AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
           AND (p_start_time IS NULL OR i.received_at >= p_start_time)
         ORDER BY i.seq
         LIMIT p_max
     ) AS e
     ORDER BY e.xid, e.seq
     LIMIT p_max)
    UNION ALL
    (SELECT i.* FROM mio.inbox AS i
     WHERE i.tenant_id = p_tenant
       AND (i.xid, i.seq) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                                  CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND i.xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(i.xid, p_hi)
       AND (cardinality(p_channel_types) = 0 OR i.channel_type = ANY (p_channel_types))
       AND (cardinality(p_account_ids) = 0 OR i.account_id = ANY (p_account_ids))
       AND (cardinality(p_conversation_ids) = 0 OR i.conversation_id = ANY (p_conversation_ids))
       AND (p_start_time IS NULL OR i.received_at >= p_start_time)
     ORDER BY i.xid, i.seq
     LIMIT p_max)
) AS w
ORDER BY w.xid, w.seq
LIMIT p_max
$$;


--
-- Name: outbox_keep_stats(); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.outbox_keep_stats() RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    SET default_statistics_target TO '10'
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


--
-- Name: provider_rank(text); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.provider_rank(state text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE state WHEN 'unknown' THEN 0 WHEN 'accepted' THEN 10 WHEN 'delivered' THEN 50 WHEN 'read' THEN 60
                            WHEN 'timed_out' THEN 90 WHEN 'bounced' THEN 100 WHEN 'dropped' THEN 100
                            WHEN 'complaint' THEN 100 WHEN 'failed' THEN 100 END $$;


--
-- Name: rate_take(uuid, text, double precision, double precision, integer, timestamp with time zone); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.rate_take(p_tenant uuid, p_key text, p_rate double precision, p_burst double precision, p_n integer, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone, OUT granted integer, OUT wait_seconds double precision) RETURNS record
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


--
-- Name: requeue(uuid); Type: FUNCTION; Schema: mio; Owner: -
--

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


--
-- Name: river_queue_depth(); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.river_queue_depth() RETURNS TABLE(queue text, available bigint, running bigint, retryable bigint, oldest_available_age interval)
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN QUERY
    SELECT j.queue::text,
           count(*) FILTER (WHERE j.state = 'available'),
           count(*) FILTER (WHERE j.state = 'running'),
           count(*) FILTER (WHERE j.state = 'retryable'),
           coalesce(now() - min(j.scheduled_at) FILTER (WHERE j.state = 'available'), interval '0')
    FROM river.river_job AS j
    WHERE j.state IN ('available', 'running', 'retryable')
    GROUP BY j.queue;
END
$$;


--
-- Name: stream_appended(uuid, text, text[], uuid[]); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.stream_appended(p_tenant uuid, p_stage text, p_channel_types text[], p_account_ids uuid[]) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT coalesce(sum(s.n), 0)::bigint FROM mio.stream_counts AS s
WHERE s.tenant_id = p_tenant AND s.stage = p_stage
  AND (cardinality(coalesce(p_channel_types, '{}')) = 0 OR s.channel_type = ANY (p_channel_types))
  AND (cardinality(coalesce(p_account_ids, '{}')) = 0 OR s.account_id = ANY (p_account_ids))
$$;


--
-- Name: stream_counts_fold(); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.stream_counts_fold() RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    t uuid;
    k bigint;
    folded bigint := 0;
BEGIN
    FOR t IN SELECT x.id FROM mio.tenants AS x ORDER BY x.id LOOP
        PERFORM set_config('app.current_tenant_id', t::text, true);
        WITH keys AS (
            SELECT s.stage, s.channel_type, s.account_id FROM mio.stream_counts AS s
            WHERE s.tenant_id = t
            GROUP BY s.stage, s.channel_type, s.account_id
            HAVING count(*) > 1
        ), d AS (
            DELETE FROM mio.stream_counts AS s
            USING keys
            WHERE s.tenant_id = t AND s.stage = keys.stage AND s.channel_type = keys.channel_type AND s.account_id = keys.account_id
            RETURNING s.stage, s.channel_type, s.account_id, s.n
        ), ins AS (
            INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
            SELECT t, d.stage, d.channel_type, d.account_id, sum(d.n) FROM d
            GROUP BY d.stage, d.channel_type, d.account_id
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM d) - (SELECT count(*) FROM ins) INTO k;
        folded := folded + k;
    END LOOP;
    PERFORM set_config('app.current_tenant_id', '', true);
    RETURN folded;
END
$$;


--
-- Name: stream_counts_inserted(); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.stream_counts_inserted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
    SELECT r.tenant_id, s.stage, r.channel_type, r.account_id, count(*)
    FROM new_rows AS r
    CROSS JOIN (VALUES ('received'), ('ready')) AS s (stage)
    WHERE s.stage = 'received' OR r.ready_xid IS NOT NULL
    GROUP BY r.tenant_id, s.stage, r.channel_type, r.account_id;
    RETURN NULL;
END
$$;


--
-- Name: stream_counts_made_ready(); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.stream_counts_made_ready() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
    SELECT r.tenant_id, 'ready', r.channel_type, r.account_id, count(*)
    FROM new_rows AS r
    JOIN old_rows AS o ON o.tenant_id = r.tenant_id AND o.id = r.id
    WHERE r.ready_xid IS NOT NULL AND r.ready_xid IS DISTINCT FROM o.ready_xid
    GROUP BY r.tenant_id, r.channel_type, r.account_id;
    RETURN NULL;
END
$$;


--
-- Name: uuid_time_floor(timestamp with time zone); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.uuid_time_floor(t timestamp with time zone) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid $$;


--
-- Name: worker_reclaim(text, double precision, integer); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.worker_reclaim(p_client_id text, p_ttl_seconds double precision, p_max integer) RETURNS TABLE(job_id bigint, kind text, tenant_id uuid, dead_client text)
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


--
-- Name: worker_schedule(text, double precision, integer); Type: FUNCTION; Schema: mio; Owner: -
--

CREATE FUNCTION mio.worker_schedule(p_client_id text, p_ttl_seconds double precision, p_max integer) RETURNS TABLE(job_id bigint, kind text, queue text)
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


--
-- Name: river_job_state_in_bitmask(bit, river.river_job_state); Type: FUNCTION; Schema: river; Owner: -
--

CREATE FUNCTION river.river_job_state_in_bitmask(bitmask bit, state river.river_job_state) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE state
        WHEN 'available' THEN get_bit(bitmask, 7)
        WHEN 'cancelled' THEN get_bit(bitmask, 6)
        WHEN 'completed' THEN get_bit(bitmask, 5)
        WHEN 'discarded' THEN get_bit(bitmask, 4)
        WHEN 'pending'   THEN get_bit(bitmask, 3)
        WHEN 'retryable' THEN get_bit(bitmask, 2)
        WHEN 'running'   THEN get_bit(bitmask, 1)
        WHEN 'scheduled' THEN get_bit(bitmask, 0)
        ELSE 0
    END = 1;
$$;


--
-- Name: account_access_tokens; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.account_access_tokens (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    credentials_enc bytea NOT NULL,
    token_enc bytea NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    renew_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY mio.account_access_tokens FORCE ROW LEVEL SECURITY;


--
-- Name: account_routes; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.account_routes (
    account_id uuid NOT NULL,
    tenant_id uuid NOT NULL,
    channel_type text NOT NULL
);


--
-- Name: accounts; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.accounts (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    channel_type text NOT NULL,
    display_name text NOT NULL,
    external_id text DEFAULT ''::text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    settings jsonb DEFAULT '{}'::jsonb NOT NULL,
    credentials_enc bytea,
    webhook_secret_enc bytea,
    rate_limit_per_sec double precision,
    rate_limit_burst integer,
    max_attempts integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    webhook_secret_prev_enc bytea,
    webhook_secret_prev_until timestamp with time zone,
    disabled_reason text DEFAULT ''::text NOT NULL,
    CONSTRAINT accounts_channel_type_check CHECK ((channel_type = ANY (ARRAY['slack'::text, 'telegram'::text, 'discord'::text, 'zoho_cliq'::text, 'whatsapp'::text, 'webhook'::text]))),
    CONSTRAINT accounts_display_name_check CHECK (((display_name <> ''::text) AND (length(display_name) <= 200))),
    CONSTRAINT accounts_max_attempts_check CHECK (((max_attempts IS NULL) OR ((max_attempts >= 1) AND (max_attempts <= 100)))),
    CONSTRAINT accounts_rate_limit_burst_check CHECK (((rate_limit_burst IS NULL) OR (rate_limit_burst > 0))),
    CONSTRAINT accounts_rate_limit_per_sec_check CHECK (((rate_limit_per_sec IS NULL) OR (rate_limit_per_sec > (0)::double precision))),
    CONSTRAINT accounts_settings_check CHECK ((jsonb_typeof(settings) = 'object'::text)),
    CONSTRAINT accounts_status_check CHECK ((status = ANY (ARRAY['active'::text, 'disabled'::text])))
);

ALTER TABLE ONLY mio.accounts FORCE ROW LEVEL SECURITY;


--
-- Name: admin_tokens; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.admin_tokens (
    id uuid NOT NULL,
    name text NOT NULL,
    roles text[] NOT NULL,
    token_sha256 bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    expires_at timestamp with time zone,
    CONSTRAINT admin_tokens_name_check CHECK (((name <> ''::text) AND (length(name) <= 200))),
    CONSTRAINT admin_tokens_roles_check CHECK (((cardinality(roles) > 0) AND (roles <@ ARRAY['viewer'::text, 'operator'::text, 'credential-admin'::text]))),
    CONSTRAINT admin_tokens_token_sha256_check CHECK ((length(token_sha256) = 32))
);


--
-- Name: api_tokens; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.api_tokens (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    name text NOT NULL,
    roles text[] NOT NULL,
    token_sha256 bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    CONSTRAINT api_tokens_name_check CHECK (((name <> ''::text) AND (length(name) <= 200))),
    CONSTRAINT api_tokens_roles_check CHECK (((cardinality(roles) > 0) AND (roles <@ ARRAY['consume'::text, 'produce'::text, 'read'::text]))),
    CONSTRAINT api_tokens_token_sha256_check CHECK ((length(token_sha256) = 32))
);

ALTER TABLE ONLY mio.api_tokens FORCE ROW LEVEL SECURITY;


--
-- Name: archive_cursors; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.archive_cursors (
    tenant_id uuid NOT NULL,
    ready_xid xid8 DEFAULT '0'::xid8 NOT NULL,
    ready_seq bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    log_lo pg_snapshot DEFAULT '1:1:'::pg_snapshot NOT NULL,
    log_hi pg_snapshot
);

ALTER TABLE ONLY mio.archive_cursors FORCE ROW LEVEL SECURITY;


--
-- Name: archive_parts; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.archive_parts (
    tenant_id uuid NOT NULL,
    object_key text NOT NULL,
    channel_type text NOT NULL,
    day date NOT NULL,
    rows integer NOT NULL,
    bytes bigint NOT NULL,
    first_xid xid8 NOT NULL,
    first_seq bigint NOT NULL,
    last_xid xid8 NOT NULL,
    last_seq bigint NOT NULL,
    written_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY mio.archive_parts FORCE ROW LEVEL SECURITY;


--
-- Name: attachments; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.attachments (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    message_id uuid NOT NULL,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    status text NOT NULL,
    kind text DEFAULT ''::text NOT NULL,
    name text DEFAULT ''::text NOT NULL,
    mime_type text DEFAULT ''::text NOT NULL,
    size bigint DEFAULT 0 NOT NULL,
    storage_key text,
    content_sha256 text,
    error text DEFAULT ''::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT attachments_check CHECK (((status = 'stored'::text) = ((storage_key IS NOT NULL) AND (content_sha256 IS NOT NULL)))),
    CONSTRAINT attachments_status_check CHECK ((status = ANY (ARRAY['stored'::text, 'failed'::text])))
);

ALTER TABLE ONLY mio.attachments FORCE ROW LEVEL SECURITY;


--
-- Name: audit_log; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.audit_log (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    tenant_id uuid,
    target text DEFAULT ''::text NOT NULL,
    before jsonb,
    after jsonb,
    CONSTRAINT audit_log_action_check CHECK ((action <> ''::text)),
    CONSTRAINT audit_log_actor_check CHECK ((actor <> ''::text))
);


--
-- Name: audit_log_id_seq; Type: SEQUENCE; Schema: mio; Owner: -
--

ALTER TABLE mio.audit_log ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mio.audit_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: bridge_cursors; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.bridge_cursors (
    tenant_id uuid NOT NULL,
    stream text NOT NULL,
    log_lo pg_snapshot DEFAULT '1:1:'::pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    after_xid xid8 DEFAULT '0'::xid8 NOT NULL,
    after_seq bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT bridge_cursors_stream_check CHECK ((stream = ANY (ARRAY['inbound'::text, 'inbound_enriched'::text, 'outbound'::text])))
);

ALTER TABLE ONLY mio.bridge_cursors FORCE ROW LEVEL SECURITY;


--
-- Name: bridge_settings; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.bridge_settings (
    tenant_id uuid NOT NULL,
    publish boolean DEFAULT true NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY mio.bridge_settings FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_deliveries; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_deliveries (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    message_id uuid NOT NULL,
    message_seq bigint NOT NULL,
    conversation_key text NOT NULL,
    state text NOT NULL,
    delivery_id uuid,
    delivery_count integer DEFAULT 0 NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    lease_expires_at timestamp with time zone,
    last_error text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    pos bigint NOT NULL,
    CONSTRAINT consumer_deliveries_check CHECK (((state = 'leased'::text) = ((delivery_id IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT consumer_deliveries_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'leased'::text, 'dead'::text])))
)
WITH (autovacuum_vacuum_scale_factor='0.01', autovacuum_vacuum_insert_scale_factor='0.01', autovacuum_vacuum_cost_delay='0', autovacuum_analyze_scale_factor='0.02');

ALTER TABLE ONLY mio.consumer_deliveries FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_id_epoch; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_id_epoch (
    one boolean DEFAULT true NOT NULL,
    started_at timestamp with time zone NOT NULL,
    CONSTRAINT consumer_id_epoch_one_check CHECK (one)
);


--
-- Name: consumer_leases; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_leases (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    id bigint NOT NULL,
    message_ids uuid[] NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT consumer_leases_id_check CHECK ((id < '281474976710656'::bigint)),
    CONSTRAINT consumer_leases_message_ids_check CHECK (((cardinality(message_ids) >= 1) AND (cardinality(message_ids) <= 4096)))
)
PARTITION BY LIST (gen);

ALTER TABLE ONLY mio.consumer_leases FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_leases_0; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_leases_0 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    id bigint NOT NULL,
    message_ids uuid[] NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT consumer_leases_id_check CHECK ((id < '281474976710656'::bigint)),
    CONSTRAINT consumer_leases_message_ids_check CHECK (((cardinality(message_ids) >= 1) AND (cardinality(message_ids) <= 4096)))
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_leases_0 FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_leases_1; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_leases_1 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    id bigint NOT NULL,
    message_ids uuid[] NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT consumer_leases_id_check CHECK ((id < '281474976710656'::bigint)),
    CONSTRAINT consumer_leases_message_ids_check CHECK (((cardinality(message_ids) >= 1) AND (cardinality(message_ids) <= 4096)))
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_leases_1 FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_leases_2; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_leases_2 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    id bigint NOT NULL,
    message_ids uuid[] NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT consumer_leases_id_check CHECK ((id < '281474976710656'::bigint)),
    CONSTRAINT consumer_leases_message_ids_check CHECK (((cardinality(message_ids) >= 1) AND (cardinality(message_ids) <= 4096)))
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_leases_2 FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_log_gen; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_log_gen (
    singleton boolean DEFAULT true NOT NULL,
    gen smallint DEFAULT 0 NOT NULL,
    next_clean boolean DEFAULT true NOT NULL,
    rotated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT consumer_log_gen_gen_check CHECK (((gen >= 0) AND (gen <= 2))),
    CONSTRAINT consumer_log_gen_singleton_check CHECK (singleton)
);


--
-- Name: consumer_position_ids; Type: SEQUENCE; Schema: mio; Owner: -
--

CREATE SEQUENCE mio.consumer_position_ids
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: consumer_positions; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_positions (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    n bigint DEFAULT nextval('mio.consumer_position_ids'::regclass) NOT NULL,
    log_lo pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    cursor_xid xid8 NOT NULL,
    cursor_seq bigint NOT NULL,
    swept bigint NOT NULL,
    last_delivered_at timestamp with time zone,
    written_at timestamp with time zone DEFAULT now() NOT NULL,
    taken bigint DEFAULT 0 NOT NULL
)
PARTITION BY LIST (gen);

ALTER TABLE ONLY mio.consumer_positions FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_positions_0; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_positions_0 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    n bigint DEFAULT nextval('mio.consumer_position_ids'::regclass) NOT NULL,
    log_lo pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    cursor_xid xid8 NOT NULL,
    cursor_seq bigint NOT NULL,
    swept bigint NOT NULL,
    last_delivered_at timestamp with time zone,
    written_at timestamp with time zone DEFAULT now() NOT NULL,
    taken bigint DEFAULT 0 NOT NULL
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_positions_0 FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_positions_1; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_positions_1 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    n bigint DEFAULT nextval('mio.consumer_position_ids'::regclass) NOT NULL,
    log_lo pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    cursor_xid xid8 NOT NULL,
    cursor_seq bigint NOT NULL,
    swept bigint NOT NULL,
    last_delivered_at timestamp with time zone,
    written_at timestamp with time zone DEFAULT now() NOT NULL,
    taken bigint DEFAULT 0 NOT NULL
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_positions_1 FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_positions_2; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_positions_2 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    n bigint DEFAULT nextval('mio.consumer_position_ids'::regclass) NOT NULL,
    log_lo pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    cursor_xid xid8 NOT NULL,
    cursor_seq bigint NOT NULL,
    swept bigint NOT NULL,
    last_delivered_at timestamp with time zone,
    written_at timestamp with time zone DEFAULT now() NOT NULL,
    taken bigint DEFAULT 0 NOT NULL
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_positions_2 FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_settles; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_settles (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    lease_id bigint NOT NULL,
    idxs integer[] NOT NULL,
    CONSTRAINT consumer_settles_idxs_check CHECK (((cardinality(idxs) >= 1) AND (cardinality(idxs) <= 4096)))
)
PARTITION BY LIST (gen);

ALTER TABLE ONLY mio.consumer_settles FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_settles_0; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_settles_0 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    lease_id bigint NOT NULL,
    idxs integer[] NOT NULL,
    CONSTRAINT consumer_settles_idxs_check CHECK (((cardinality(idxs) >= 1) AND (cardinality(idxs) <= 4096)))
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_settles_0 FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_settles_1; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_settles_1 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    lease_id bigint NOT NULL,
    idxs integer[] NOT NULL,
    CONSTRAINT consumer_settles_idxs_check CHECK (((cardinality(idxs) >= 1) AND (cardinality(idxs) <= 4096)))
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_settles_1 FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_settles_2; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumer_settles_2 (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    lease_id bigint NOT NULL,
    idxs integer[] NOT NULL,
    CONSTRAINT consumer_settles_idxs_check CHECK (((cardinality(idxs) >= 1) AND (cardinality(idxs) <= 4096)))
)
WITH (autovacuum_vacuum_insert_scale_factor='0.2');

ALTER TABLE ONLY mio.consumer_settles_2 FORCE ROW LEVEL SECURITY;


--
-- Name: consumers; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.consumers (
    tenant_id uuid NOT NULL,
    name text NOT NULL,
    filter_channel_types text[] DEFAULT '{}'::text[] NOT NULL,
    filter_account_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    filter_conversation_ids text[] DEFAULT '{}'::text[] NOT NULL,
    deliver_policy text NOT NULL,
    start_time timestamp with time zone,
    ack_wait_ms bigint NOT NULL,
    max_deliver integer NOT NULL,
    max_ack_pending integer NOT NULL,
    ordering text NOT NULL,
    stage text NOT NULL,
    cursor_xid xid8 NOT NULL,
    cursor_seq bigint NOT NULL,
    last_delivered_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    log_lo pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    swept bigint DEFAULT 0 NOT NULL,
    taken bigint DEFAULT 0 NOT NULL,
    backlog_base bigint DEFAULT 0 NOT NULL,
    CONSTRAINT consumers_ack_wait_ms_check CHECK (((ack_wait_ms >= 1000) AND (ack_wait_ms <= 43200000))),
    CONSTRAINT consumers_check CHECK (((deliver_policy = 'by_start_time'::text) = (start_time IS NOT NULL))),
    CONSTRAINT consumers_deliver_policy_check CHECK ((deliver_policy = ANY (ARRAY['all'::text, 'new'::text, 'by_start_time'::text]))),
    CONSTRAINT consumers_max_ack_pending_check CHECK (((max_ack_pending >= 1) AND (max_ack_pending <= 100000))),
    CONSTRAINT consumers_max_deliver_check CHECK (((max_deliver >= 1) AND (max_deliver <= 1000))),
    CONSTRAINT consumers_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'::text)),
    CONSTRAINT consumers_ordering_check CHECK ((ordering = ANY (ARRAY['none'::text, 'conversation'::text]))),
    CONSTRAINT consumers_stage_check CHECK ((stage = ANY (ARRAY['ready'::text, 'received'::text])))
);

ALTER TABLE ONLY mio.consumers FORCE ROW LEVEL SECURITY;


--
-- Name: consumer_state; Type: VIEW; Schema: mio; Owner: -
--

CREATE VIEW mio.consumer_state WITH (security_invoker='true') AS
 SELECT c.tenant_id,
    c.name,
    c.filter_channel_types,
    c.filter_account_ids,
    c.filter_conversation_ids,
    c.deliver_policy,
    c.start_time,
    c.ack_wait_ms,
    c.max_deliver,
    c.max_ack_pending,
    c.ordering,
    c.stage,
    COALESCE(p.cursor_xid, c.cursor_xid) AS cursor_xid,
    COALESCE(p.cursor_seq, c.cursor_seq) AS cursor_seq,
    COALESCE(p.log_lo, c.log_lo) AS log_lo,
        CASE
            WHEN (p.n IS NULL) THEN c.log_hi
            ELSE p.log_hi
        END AS log_hi,
    COALESCE(p.swept, c.swept) AS swept,
    COALESCE(p.last_delivered_at, c.last_delivered_at) AS last_delivered_at,
    p.written_at AS position_written_at,
    c.created_at,
    c.updated_at,
    COALESCE(p.taken, c.taken) AS taken,
    c.backlog_base
   FROM (mio.consumers c
     LEFT JOIN LATERAL ( SELECT q.n,
            q.cursor_xid,
            q.cursor_seq,
            q.log_lo,
            q.log_hi,
            q.swept,
            q.last_delivered_at,
            q.written_at,
            q.taken
           FROM mio.consumer_positions q
          WHERE ((q.tenant_id = c.tenant_id) AND (q.consumer_name = c.name))
          ORDER BY q.n DESC
         LIMIT 1) p ON (true));


--
-- Name: consumer_take_ids; Type: SEQUENCE; Schema: mio; Owner: -
--

CREATE SEQUENCE mio.consumer_take_ids
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    MAXVALUE 281474976710655
    CACHE 1;


--
-- Name: outbox; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.outbox (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint NOT NULL,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    thread_id text DEFAULT ''::text NOT NULL,
    idempotency_key text NOT NULL,
    request_sha256 bytea NOT NULL,
    text text DEFAULT ''::text NOT NULL,
    rich_content jsonb,
    attachments jsonb,
    edit_of uuid,
    handoff_state text DEFAULT 'queued'::text NOT NULL,
    active boolean GENERATED ALWAYS AS ((handoff_state = ANY (ARRAY['queued'::text, 'sending'::text]))) STORED,
    provider_state text DEFAULT 'unknown'::text NOT NULL,
    attempt_no integer DEFAULT 1 NOT NULL,
    series integer DEFAULT 1 NOT NULL,
    series_first_attempt integer DEFAULT 1 NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    lease_until timestamp with time zone,
    job_id bigint,
    provider_message_id text,
    receipts boolean DEFAULT false NOT NULL,
    last_error text,
    receipt_due_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    handed_off_at timestamp with time zone,
    dead_at timestamp with time zone,
    discarded_at timestamp with time zone,
    CONSTRAINT outbox_attempt_no_check CHECK ((attempt_no >= 1)),
    CONSTRAINT outbox_conversation_id_check CHECK ((conversation_id <> ''::text)),
    CONSTRAINT outbox_handoff_state_check CHECK ((mio.handoff_rank(handoff_state) IS NOT NULL)),
    CONSTRAINT outbox_idempotency_key_check CHECK ((idempotency_key <> ''::text)),
    CONSTRAINT outbox_provider_state_check CHECK ((mio.provider_rank(provider_state) IS NOT NULL))
)
WITH (fillfactor='45');
ALTER TABLE ONLY mio.outbox ALTER COLUMN text SET COMPRESSION lz4;
ALTER TABLE ONLY mio.outbox ALTER COLUMN rich_content SET COMPRESSION lz4;
ALTER TABLE ONLY mio.outbox ALTER COLUMN attachments SET COMPRESSION lz4;

ALTER TABLE ONLY mio.outbox FORCE ROW LEVEL SECURITY;


--
-- Name: dead_letters; Type: VIEW; Schema: mio; Owner: -
--

CREATE VIEW mio.dead_letters WITH (security_invoker='true') AS
 SELECT 'outbound'::text AS kind,
    o.tenant_id,
    o.id,
    o.channel_type,
    o.account_id,
    o.attempts,
    o.last_error,
    o.created_at,
    o.dead_at,
    jsonb_build_object('conversation_id', o.conversation_id, 'attempt_no', o.attempt_no, 'series', o.series, 'idempotency_key', o.idempotency_key) AS detail
   FROM mio.outbox o
  WHERE ((o.handoff_state = 'dead'::text) AND (o.discarded_at IS NULL))
UNION ALL
 SELECT 'consumer'::text AS kind,
    d.tenant_id,
    d.message_id AS id,
    COALESCE(i.channel_type, ''::text) AS channel_type,
    COALESCE(i.account_id, '00000000-0000-0000-0000-000000000000'::uuid) AS account_id,
    d.delivery_count AS attempts,
    d.last_error,
    COALESCE(i.received_at, d.created_at) AS created_at,
    d.updated_at AS dead_at,
    jsonb_build_object('consumer', d.consumer_name) AS detail
   FROM (mio.consumer_deliveries d
     LEFT JOIN mio.inbox i ON (((i.tenant_id = d.tenant_id) AND (i.id = d.message_id))))
  WHERE (d.state = 'dead'::text)
UNION ALL
 SELECT 'attachment'::text AS kind,
    a.tenant_id,
    a.id,
    a.channel_type,
    a.account_id,
    a.attempts,
    a.error AS last_error,
    COALESCE(i.received_at, a.created_at) AS created_at,
    a.created_at AS dead_at,
    jsonb_build_object('message_id', a.message_id, 'kind', a.kind, 'name', a.name, 'mime_type', a.mime_type) AS detail
   FROM (mio.attachments a
     LEFT JOIN mio.inbox i ON (((i.tenant_id = a.tenant_id) AND (i.id = a.message_id))))
  WHERE (a.status = 'failed'::text);


--
-- Name: delivery_id_key; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.delivery_id_key (
    singleton boolean DEFAULT true NOT NULL,
    key bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT delivery_id_key_key_check CHECK ((length(key) = 32)),
    CONSTRAINT delivery_id_key_singleton_check CHECK (singleton)
);


--
-- Name: gateway_sessions; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.gateway_sessions (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    holder uuid,
    lease_until timestamp with time zone DEFAULT '1970-01-01 00:00:00+00'::timestamp with time zone NOT NULL,
    session_id text DEFAULT ''::text NOT NULL,
    resume_url text DEFAULT ''::text NOT NULL,
    seq bigint DEFAULT 0 NOT NULL,
    identify_at timestamp with time zone DEFAULT '1970-01-01 00:00:00+00'::timestamp with time zone NOT NULL,
    identifies integer DEFAULT 0 NOT NULL,
    identify_window timestamp with time zone DEFAULT '1970-01-01 00:00:00+00'::timestamp with time zone NOT NULL,
    error text DEFAULT ''::text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY mio.gateway_sessions FORCE ROW LEVEL SECURITY;


--
-- Name: inbound_dedup; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbound_dedup (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    source_message_id text NOT NULL,
    message_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY mio.inbound_dedup FORCE ROW LEVEL SECURITY;


--
-- Name: inbound_refs; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbound_refs (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    conversation_id text NOT NULL,
    platform_message_id text NOT NULL,
    message_id uuid NOT NULL,
    source_message_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY mio.inbound_refs FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_seq; Type: SEQUENCE; Schema: mio; Owner: -
--

CREATE SEQUENCE mio.inbox_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: inbox_seq; Type: SEQUENCE OWNED BY; Schema: mio; Owner: -
--

ALTER SEQUENCE mio.inbox_seq OWNED BY mio.inbox.seq;


--
-- Name: inbox_default; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_default (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_default ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_default ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_default FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_p20261128; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_p20261128 (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_p20261128 ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_p20261128 ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_p20261128 FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_p20261129; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_p20261129 (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_p20261129 ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_p20261129 ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_p20261129 FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_p20261130; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_p20261130 (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_p20261130 ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_p20261130 ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_p20261130 FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_p20261201; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_p20261201 (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_p20261201 ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_p20261201 ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_p20261201 FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_p20261202; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_p20261202 (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_p20261202 ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_p20261202 ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_p20261202 FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_p20261203; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_p20261203 (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_p20261203 ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_p20261203 ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_p20261203 FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_p20261204; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_p20261204 (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_p20261204 ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_p20261204 ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_p20261204 FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_p20261205; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.inbox_p20261205 (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb NOT NULL,
    raw bytea,
    received_at timestamp with time zone NOT NULL,
    ready_at timestamp with time zone,
    archived_at timestamp with time zone,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready'::text) = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received'::text, 'ready'::text])))
);
ALTER TABLE ONLY mio.inbox_p20261205 ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE ONLY mio.inbox_p20261205 ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.inbox_p20261205 FORCE ROW LEVEL SECURITY;


--
-- Name: inbox_ready_seq; Type: SEQUENCE; Schema: mio; Owner: -
--

CREATE SEQUENCE mio.inbox_ready_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: media_blobs; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.media_blobs (
    content_sha256 text NOT NULL,
    storage_key text NOT NULL,
    size bigint NOT NULL,
    refs bigint DEFAULT 0 NOT NULL,
    unreferenced_since timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT media_blobs_content_sha256_check CHECK ((content_sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT media_blobs_refs_check CHECK ((refs >= 0))
);


--
-- Name: outbox_events_id_seq; Type: SEQUENCE; Schema: mio; Owner: -
--

ALTER TABLE mio.outbox_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mio.outbox_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: outbox_seq_seq; Type: SEQUENCE; Schema: mio; Owner: -
--

ALTER TABLE mio.outbox ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mio.outbox_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: provider_events; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.provider_events (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    provider_message_id text NOT NULL,
    status text NOT NULL,
    occurred_at timestamp with time zone,
    recipient_id text DEFAULT ''::text NOT NULL,
    error text DEFAULT ''::text NOT NULL,
    raw jsonb,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    applied_at timestamp with time zone
);
ALTER TABLE ONLY mio.provider_events ALTER COLUMN raw SET COMPRESSION lz4;

ALTER TABLE ONLY mio.provider_events FORCE ROW LEVEL SECURITY;


--
-- Name: stream_counts; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.stream_counts (
    tenant_id uuid NOT NULL,
    stage text NOT NULL,
    channel_type text NOT NULL,
    account_id uuid NOT NULL,
    n bigint NOT NULL,
    CONSTRAINT stream_counts_stage_check CHECK ((stage = ANY (ARRAY['received'::text, 'ready'::text])))
)
WITH (autovacuum_vacuum_scale_factor='0.0', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_insert_scale_factor='0.0', autovacuum_vacuum_insert_threshold='1000');

ALTER TABLE ONLY mio.stream_counts FORCE ROW LEVEL SECURITY;


--
-- Name: queue_health; Type: VIEW; Schema: mio; Owner: -
--

CREATE VIEW mio.queue_health WITH (security_invoker='true') AS
 SELECT 'consumer'::text AS kind,
    c.tenant_id,
    c.name AS consumer,
    NULL::text AS queue,
    (d.pending + u.untaken) AS pending,
    (d.ack_pending + l.leased) AS ack_pending,
    d.redelivered,
    d.dead,
    COALESCE((now() - LEAST(d.oldest_pending, o.next_untaken_at)), '00:00:00'::interval) AS oldest_pending_age,
    c.last_delivered_at,
    NULL::bigint AS available,
    NULL::bigint AS running,
    NULL::bigint AS retryable,
    NULL::interval AS oldest_available_age
   FROM ((((mio.consumer_state c
     CROSS JOIN LATERAL ( SELECT count(*) FILTER (WHERE (x.state = 'pending'::text)) AS pending,
            count(*) FILTER (WHERE (x.state = 'leased'::text)) AS ack_pending,
            count(*) FILTER (WHERE ((x.state <> 'dead'::text) AND (x.delivery_count > 1))) AS redelivered,
            count(*) FILTER (WHERE (x.state = 'dead'::text)) AS dead,
            min(x.created_at) FILTER (WHERE (x.state = 'pending'::text)) AS oldest_pending
           FROM mio.consumer_deliveries x
          WHERE ((x.tenant_id = c.tenant_id) AND (x.consumer_name = c.name))) d)
     CROSS JOIN LATERAL ( SELECT (COALESCE(sum((cardinality(r.message_ids) - COALESCE(( SELECT sum(cardinality(s.idxs)) AS sum
                   FROM mio.consumer_settles s
                  WHERE ((s.tenant_id = r.tenant_id) AND (s.consumer_name = r.consumer_name) AND (s.lease_id = r.id))), (0)::bigint))), (0)::numeric))::bigint AS leased
           FROM mio.consumer_leases r
          WHERE ((r.tenant_id = c.tenant_id) AND (r.consumer_name = c.name) AND (r.id > c.swept))) l)
     CROSS JOIN LATERAL ( SELECT (
                CASE
                    WHEN mio.consumer_counts_rows(c.filter_conversation_ids, c.start_time, c.created_at) THEN (mio.consumer_untaken_rows(c.tenant_id, c.stage, c.log_lo, c.log_hi, c.cursor_xid, c.cursor_seq, c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time))::numeric
                    ELSE ((( SELECT COALESCE(sum(k.n), (0)::numeric) AS "coalesce"
                       FROM mio.stream_counts k
                      WHERE ((k.tenant_id = c.tenant_id) AND (k.stage = c.stage) AND ((cardinality(COALESCE(c.filter_channel_types, '{}'::text[])) = 0) OR (k.channel_type = ANY (c.filter_channel_types))) AND ((cardinality(COALESCE(c.filter_account_ids, '{}'::uuid[])) = 0) OR (k.account_id = ANY (c.filter_account_ids))))) - (c.backlog_base)::numeric) - (c.taken)::numeric)
                END)::bigint AS untaken) u)
     CROSS JOIN LATERAL ( SELECT min(f.received_at) AS next_untaken_at
           FROM ( SELECT i.received_at
                   FROM mio.log_ready(c.tenant_id, c.log_lo, COALESCE(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq, COALESCE(c.filter_channel_types, '{}'::text[]), COALESCE(c.filter_account_ids, '{}'::uuid[]), COALESCE(c.filter_conversation_ids, '{}'::text[]), c.start_time, 1) i(tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at)
                  WHERE ((u.untaken > 0) AND (c.stage = 'ready'::text))
                UNION ALL
                 SELECT i.received_at
                   FROM mio.log_ready(c.tenant_id, c.log_hi, pg_current_snapshot(), '0'::xid8, (0)::bigint, COALESCE(c.filter_channel_types, '{}'::text[]), COALESCE(c.filter_account_ids, '{}'::uuid[]), COALESCE(c.filter_conversation_ids, '{}'::text[]), c.start_time, 1) i(tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at)
                  WHERE ((u.untaken > 0) AND (c.stage = 'ready'::text) AND (c.log_hi IS NOT NULL))
                UNION ALL
                 SELECT i.received_at
                   FROM mio.log_received(c.tenant_id, c.log_lo, COALESCE(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq, COALESCE(c.filter_channel_types, '{}'::text[]), COALESCE(c.filter_account_ids, '{}'::uuid[]), COALESCE(c.filter_conversation_ids, '{}'::text[]), c.start_time, 1) i(tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at)
                  WHERE ((u.untaken > 0) AND (c.stage = 'received'::text))
                UNION ALL
                 SELECT i.received_at
                   FROM mio.log_received(c.tenant_id, c.log_hi, pg_current_snapshot(), '0'::xid8, (0)::bigint, COALESCE(c.filter_channel_types, '{}'::text[]), COALESCE(c.filter_account_ids, '{}'::uuid[]), COALESCE(c.filter_conversation_ids, '{}'::text[]), c.start_time, 1) i(tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at)
                  WHERE ((u.untaken > 0) AND (c.stage = 'received'::text) AND (c.log_hi IS NOT NULL))) f) o)
UNION ALL
 SELECT 'river_queue'::text AS kind,
    NULL::uuid AS tenant_id,
    NULL::text AS consumer,
    q.queue,
    NULL::bigint AS pending,
    NULL::bigint AS ack_pending,
    NULL::bigint AS redelivered,
    NULL::bigint AS dead,
    NULL::interval AS oldest_pending_age,
    NULL::timestamp with time zone AS last_delivered_at,
    q.available,
    q.running,
    q.retryable,
    q.oldest_available_age
   FROM mio.river_queue_depth() q(queue, available, running, retryable, oldest_available_age);


--
-- Name: rate_buckets; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.rate_buckets (
    tenant_id uuid NOT NULL,
    bucket_key text NOT NULL,
    tokens double precision NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

ALTER TABLE ONLY mio.rate_buckets FORCE ROW LEVEL SECURITY;


--
-- Name: source_cursors; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.source_cursors (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    conversation_id text NOT NULL,
    conversation_type text DEFAULT ''::text NOT NULL,
    last_source_id text NOT NULL,
    active_at timestamp with time zone NOT NULL,
    gap_after text DEFAULT ''::text NOT NULL,
    gap_before text DEFAULT ''::text NOT NULL
);

ALTER TABLE ONLY mio.source_cursors FORCE ROW LEVEL SECURITY;


--
-- Name: telegram_pollers; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.telegram_pollers (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    next_offset bigint DEFAULT 0 NOT NULL,
    holder uuid,
    lease_until timestamp with time zone DEFAULT '-infinity'::timestamp with time zone NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY mio.telegram_pollers FORCE ROW LEVEL SECURITY;


--
-- Name: tenants; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.tenants (
    id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    CONSTRAINT tenants_name_check CHECK (((name <> ''::text) AND (length(name) <= 200))),
    CONSTRAINT tenants_status_check CHECK ((status = ANY (ARRAY['active'::text, 'disabled'::text])))
);


--
-- Name: worker_heartbeats; Type: TABLE; Schema: mio; Owner: -
--

CREATE TABLE mio.worker_heartbeats (
    client_id text NOT NULL,
    alive_since timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);


--
-- Name: mio_schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.mio_schema_migrations (
    id integer NOT NULL,
    version_id bigint NOT NULL,
    is_applied boolean NOT NULL,
    tstamp timestamp without time zone DEFAULT now() NOT NULL
);


--
-- Name: mio_schema_migrations_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.mio_schema_migrations ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.mio_schema_migrations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: river_job; Type: TABLE; Schema: river; Owner: -
--

CREATE TABLE river.river_job (
    id bigint NOT NULL,
    state river.river_job_state DEFAULT 'available'::river.river_job_state NOT NULL,
    attempt smallint DEFAULT 0 NOT NULL,
    max_attempts smallint DEFAULT 25 NOT NULL,
    attempted_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finalized_at timestamp with time zone,
    scheduled_at timestamp with time zone DEFAULT now() NOT NULL,
    priority smallint DEFAULT 1 NOT NULL,
    args jsonb NOT NULL,
    attempted_by text[],
    errors jsonb[],
    kind text NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    queue text DEFAULT 'default'::text NOT NULL,
    tags character varying(255)[] DEFAULT '{}'::character varying[] NOT NULL,
    unique_key bytea,
    unique_states bit(8),
    CONSTRAINT finalized_or_finalized_at_null CHECK ((((finalized_at IS NULL) AND (state <> ALL (ARRAY['cancelled'::river.river_job_state, 'completed'::river.river_job_state, 'discarded'::river.river_job_state]))) OR ((finalized_at IS NOT NULL) AND (state = ANY (ARRAY['cancelled'::river.river_job_state, 'completed'::river.river_job_state, 'discarded'::river.river_job_state]))))),
    CONSTRAINT kind_length CHECK (((char_length(kind) > 0) AND (char_length(kind) < 128))),
    CONSTRAINT max_attempts_is_positive CHECK ((max_attempts > 0)),
    CONSTRAINT priority_in_range CHECK (((priority >= 1) AND (priority <= 4))),
    CONSTRAINT queue_length CHECK (((char_length(queue) > 0) AND (char_length(queue) < 128)))
);


--
-- Name: river_job_id_seq; Type: SEQUENCE; Schema: river; Owner: -
--

CREATE SEQUENCE river.river_job_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: river_job_id_seq; Type: SEQUENCE OWNED BY; Schema: river; Owner: -
--

ALTER SEQUENCE river.river_job_id_seq OWNED BY river.river_job.id;


--
-- Name: river_leader; Type: TABLE; Schema: river; Owner: -
--

CREATE UNLOGGED TABLE river.river_leader (
    elected_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    leader_id text NOT NULL,
    name text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT leader_id_length CHECK (((char_length(leader_id) > 0) AND (char_length(leader_id) < 128))),
    CONSTRAINT name_length CHECK ((name = 'default'::text))
);


--
-- Name: river_migration; Type: TABLE; Schema: river; Owner: -
--

CREATE TABLE river.river_migration (
    line text NOT NULL,
    version bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT line_length CHECK (((char_length(line) > 0) AND (char_length(line) < 128))),
    CONSTRAINT version_gte_1 CHECK ((version >= 1))
);


--
-- Name: river_notification; Type: TABLE; Schema: river; Owner: -
--

CREATE TABLE river.river_notification (
    id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    payload text NOT NULL,
    topic text NOT NULL,
    CONSTRAINT topic_length CHECK (((length(topic) > 0) AND (length(topic) < 128)))
);


--
-- Name: river_notification_id_seq; Type: SEQUENCE; Schema: river; Owner: -
--

CREATE SEQUENCE river.river_notification_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: river_notification_id_seq; Type: SEQUENCE OWNED BY; Schema: river; Owner: -
--

ALTER SEQUENCE river.river_notification_id_seq OWNED BY river.river_notification.id;


--
-- Name: river_queue; Type: TABLE; Schema: river; Owner: -
--

CREATE TABLE river.river_queue (
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    paused_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);


--
-- Name: consumer_leases_0; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_leases ATTACH PARTITION mio.consumer_leases_0 FOR VALUES IN ('0');


--
-- Name: consumer_leases_1; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_leases ATTACH PARTITION mio.consumer_leases_1 FOR VALUES IN ('1');


--
-- Name: consumer_leases_2; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_leases ATTACH PARTITION mio.consumer_leases_2 FOR VALUES IN ('2');


--
-- Name: consumer_positions_0; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_positions ATTACH PARTITION mio.consumer_positions_0 FOR VALUES IN ('0');


--
-- Name: consumer_positions_1; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_positions ATTACH PARTITION mio.consumer_positions_1 FOR VALUES IN ('1');


--
-- Name: consumer_positions_2; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_positions ATTACH PARTITION mio.consumer_positions_2 FOR VALUES IN ('2');


--
-- Name: consumer_settles_0; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_settles ATTACH PARTITION mio.consumer_settles_0 FOR VALUES IN ('0');


--
-- Name: consumer_settles_1; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_settles ATTACH PARTITION mio.consumer_settles_1 FOR VALUES IN ('1');


--
-- Name: consumer_settles_2; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_settles ATTACH PARTITION mio.consumer_settles_2 FOR VALUES IN ('2');


--
-- Name: inbox_default; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_default DEFAULT;


--
-- Name: inbox_p20261128; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_p20261128 FOR VALUES FROM ('01a21f73-9c00-0000-0000-000000000000') TO ('01a22499-f800-0000-0000-000000000000');


--
-- Name: inbox_p20261129; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_p20261129 FOR VALUES FROM ('01a22499-f800-0000-0000-000000000000') TO ('01a229c0-5400-0000-0000-000000000000');


--
-- Name: inbox_p20261130; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_p20261130 FOR VALUES FROM ('01a229c0-5400-0000-0000-000000000000') TO ('01a22ee6-b000-0000-0000-000000000000');


--
-- Name: inbox_p20261201; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_p20261201 FOR VALUES FROM ('01a22ee6-b000-0000-0000-000000000000') TO ('01a2340d-0c00-0000-0000-000000000000');


--
-- Name: inbox_p20261202; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_p20261202 FOR VALUES FROM ('01a2340d-0c00-0000-0000-000000000000') TO ('01a23933-6800-0000-0000-000000000000');


--
-- Name: inbox_p20261203; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_p20261203 FOR VALUES FROM ('01a23933-6800-0000-0000-000000000000') TO ('01a23e59-c400-0000-0000-000000000000');


--
-- Name: inbox_p20261204; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_p20261204 FOR VALUES FROM ('01a23e59-c400-0000-0000-000000000000') TO ('01a24380-2000-0000-0000-000000000000');


--
-- Name: inbox_p20261205; Type: TABLE ATTACH; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ATTACH PARTITION mio.inbox_p20261205 FOR VALUES FROM ('01a24380-2000-0000-0000-000000000000') TO ('01a248a6-7c00-0000-0000-000000000000');


--
-- Name: inbox seq; Type: DEFAULT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox ALTER COLUMN seq SET DEFAULT nextval('mio.inbox_seq'::regclass);


--
-- Name: river_job id; Type: DEFAULT; Schema: river; Owner: -
--

ALTER TABLE ONLY river.river_job ALTER COLUMN id SET DEFAULT nextval('river.river_job_id_seq'::regclass);


--
-- Name: river_notification id; Type: DEFAULT; Schema: river; Owner: -
--

ALTER TABLE ONLY river.river_notification ALTER COLUMN id SET DEFAULT nextval('river.river_notification_id_seq'::regclass);


--
-- Data for Name: account_access_tokens; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.account_access_tokens (tenant_id, account_id, credentials_enc, token_enc, expires_at, renew_at, updated_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '1ac7db6a-64a2-49e3-90af-48d753d0971a', '\x00', '\x00', '2026-11-28 19:36:21.132191+00', '2026-11-28 19:06:21.132191+00', '2026-11-28 18:36:21.132191+00');


--
-- Data for Name: account_routes; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.account_routes (account_id, tenant_id, channel_type) VALUES ('32428ea4-29a4-4fbc-abb5-40ae20cf2dad', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'slack');
INSERT INTO mio.account_routes (account_id, tenant_id, channel_type) VALUES ('256fee44-5658-4c51-8c87-0b42c9a9787b', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'telegram');
INSERT INTO mio.account_routes (account_id, tenant_id, channel_type) VALUES ('037ece70-b5ab-4a80-b11e-fb5a5f2ae964', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'discord');
INSERT INTO mio.account_routes (account_id, tenant_id, channel_type) VALUES ('1ac7db6a-64a2-49e3-90af-48d753d0971a', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'zoho_cliq');
INSERT INTO mio.account_routes (account_id, tenant_id, channel_type) VALUES ('33469f8c-f566-4c08-b485-82f4fcd172c3', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'whatsapp');
INSERT INTO mio.account_routes (account_id, tenant_id, channel_type) VALUES ('395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'webhook');


--
-- Data for Name: accounts; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.accounts (tenant_id, id, channel_type, display_name, external_id, status, settings, credentials_enc, webhook_secret_enc, rate_limit_per_sec, rate_limit_burst, max_attempts, created_at, updated_at, webhook_secret_prev_enc, webhook_secret_prev_until, disabled_reason) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'webhook', '', 'active', '{"endpoint_url": "http://127.0.0.1:45799/webhook/in"}', NULL, '\x01cfd8068479ef11fcbd0bc57815ad4d4c6aa6336dd27832a241b90324353d97cf2e3dfb213386a31771b3f634321fb13a5c7481eb67f74cd9c0d0b58a39b94b6c52263e7a3cd28e1991295c32255a', NULL, NULL, NULL, '2026-11-28 18:36:19.298586+00', '2026-11-28 18:36:19.298586+00', NULL, NULL, '');
INSERT INTO mio.accounts (tenant_id, id, channel_type, display_name, external_id, status, settings, credentials_enc, webhook_secret_enc, rate_limit_per_sec, rate_limit_burst, max_attempts, created_at, updated_at, webhook_secret_prev_enc, webhook_secret_prev_until, disabled_reason) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '32428ea4-29a4-4fbc-abb5-40ae20cf2dad', 'slack', 'slack', '', 'active', '{}', '\x01ae6c415b184d0c54245efbed602b30c2a103c77f84752ba0eeaef37c1ed56930526571318c47a31856998b9299dcbebcc961af474f', '\x019f15610662e509773f085dd81fbd58a1b02b7dd3ba19d88239d060d8dfb2114d701cb4d10bec1b1b', 10000, 10000, NULL, '2026-11-28 18:36:19.285679+00', '2026-11-28 18:36:19.285679+00', NULL, NULL, '');
INSERT INTO mio.accounts (tenant_id, id, channel_type, display_name, external_id, status, settings, credentials_enc, webhook_secret_enc, rate_limit_per_sec, rate_limit_burst, max_attempts, created_at, updated_at, webhook_secret_prev_enc, webhook_secret_prev_until, disabled_reason) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '256fee44-5658-4c51-8c87-0b42c9a9787b', 'telegram', 'telegram', '', 'active', '{}', '\x01fe214fbb099467cd5a9f15da6a6fad05c4560e65178bfde3bbd4cea6a4c01ad19a2ab8b7f95e6e42f33100bc3a24b23bab833069dd390697529e46e469', '\x0182b02e0524328a13b6d314ef3a97f5c80e786df38533ca1663bbd46ce04c03673a790b24a5b2c8a10dc611', 10000, 10000, NULL, '2026-11-28 18:36:19.292482+00', '2026-11-28 18:36:19.292482+00', NULL, NULL, '');
INSERT INTO mio.accounts (tenant_id, id, channel_type, display_name, external_id, status, settings, credentials_enc, webhook_secret_enc, rate_limit_per_sec, rate_limit_burst, max_attempts, created_at, updated_at, webhook_secret_prev_enc, webhook_secret_prev_until, disabled_reason) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '037ece70-b5ab-4a80-b11e-fb5a5f2ae964', 'discord', 'discord', '', 'active', '{}', '\x01274a1035c1fbf92aa1740f14694db7892b739c6827c40751a5f99a1b3b9b05b0fdc3211d96efa5409e09d4dbd4eb7b3b7048bceec2b399b71b', '\x01bcc84f2fc1fa36b61328ab43360a1ef1cece1652b4a50912bc56168288d584e19a00150c0ddef8a29d29', 10000, 10000, NULL, '2026-11-28 18:36:19.294295+00', '2026-11-28 18:36:19.294295+00', NULL, NULL, '');
INSERT INTO mio.accounts (tenant_id, id, channel_type, display_name, external_id, status, settings, credentials_enc, webhook_secret_enc, rate_limit_per_sec, rate_limit_burst, max_attempts, created_at, updated_at, webhook_secret_prev_enc, webhook_secret_prev_until, disabled_reason) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '1ac7db6a-64a2-49e3-90af-48d753d0971a', 'zoho_cliq', 'zoho_cliq', '', 'active', '{}', '\x01a7d453209a581d4a5d26df9bb8602fbd7dbdd432a929ffea53bec5d35866f5dfc40af2cd7b398bf3352eff03682e25bae29ea113427d57c772', '\x01e767d647fa5d008899404f8690443af6958d63466854a11bec0193b11a2d4cb6921624eec29ceefea8f7cf75', 10000, 10000, NULL, '2026-11-28 18:36:19.295536+00', '2026-11-28 18:36:19.295536+00', NULL, NULL, '');
INSERT INTO mio.accounts (tenant_id, id, channel_type, display_name, external_id, status, settings, credentials_enc, webhook_secret_enc, rate_limit_per_sec, rate_limit_burst, max_attempts, created_at, updated_at, webhook_secret_prev_enc, webhook_secret_prev_until, disabled_reason) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '33469f8c-f566-4c08-b485-82f4fcd172c3', 'whatsapp', 'whatsapp', '', 'active', '{"phone_number_id": "5550001"}', '\x01fd255837e32bc3bd3ca592888b56e919f2c970981f10a6ebe89f2a5f1af8050e219807b7a17a1b11ccfe77673445370ba7c2f66e110566', '\x01acef10c7f6af20e325e9803908c67633f2b50bcb07ce56774f96d2650916e42191670075845cee257a6f55', 10000, 10000, NULL, '2026-11-28 18:36:19.297304+00', '2026-11-28 18:36:19.297304+00', NULL, NULL, '');


--
-- Data for Name: admin_tokens; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.admin_tokens (id, name, roles, token_sha256, created_at, last_used_at, revoked_at, expires_at) VALUES ('6ca5a6e5-5b6f-4b31-a617-1209ce521d28', 'ops', '{operator}', '\x90274984cd9917bc77f882797f31240d8b7adc162265e0ee3397ba8dc19ce2a3', '2026-11-28 18:36:19.325117+00', NULL, NULL, NULL);


--
-- Data for Name: api_tokens; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.api_tokens (tenant_id, id, name, roles, token_sha256, created_at, last_used_at, revoked_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '2ad2f1f0-a6d5-4bbc-bc30-928eadd98ba8', 'agent', '{consume,produce,read}', '\xdf7c9003b4a3376c8ce3e38b642659acac5f2e739b4d94619ce25bf8c271cabd', '2026-11-28 18:36:19.321523+00', NULL, NULL);


--
-- Data for Name: archive_cursors; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.archive_cursors (tenant_id, ready_xid, ready_seq, updated_at, log_lo, log_hi) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '0', 0, '2026-11-28 18:36:21.122351+00', '819:822:819', NULL);


--
-- Data for Name: archive_parts; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.archive_parts (tenant_id, object_key, channel_type, day, rows, bytes, first_xid, first_seq, last_xid, last_seq, written_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'archive/ac8d79df-2c0d-40a9-83ac-de5f033298d4/webhook/2026-11-28.ndjson', 'webhook', '2026-11-28', 3, 900, '10', 1, '12', 3, '2026-11-28 18:36:21.123555+00');


--
-- Data for Name: attachments; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.attachments (tenant_id, id, message_id, account_id, channel_type, status, kind, name, mime_type, size, storage_key, content_sha256, error, attempts, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '20219c51-10d5-4066-942c-a6b5cd176a53', '01a22371-a300-7426-84c2-e2b2f85d7daf', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'stored', 'file', 'a.txt', 'text/plain', 5, 'blobs/abababababababababababababababababababababababababababababababab', 'abababababababababababababababababababababababababababababababab', '', 0, '2026-11-28 18:36:21.120975+00');
INSERT INTO mio.attachments (tenant_id, id, message_id, account_id, channel_type, status, kind, name, mime_type, size, storage_key, content_sha256, error, attempts, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'd0db2111-27f5-4c4e-a526-62a32b24b6d9', '01a22371-a300-7426-84c2-e2b2f85d7daf', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'failed', 'image', 'b.png', '', 0, NULL, NULL, 'HTTP 404', 3, '2026-11-28 18:36:21.121747+00');


--
-- Data for Name: audit_log; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (1, '2026-11-28 18:36:19.273246+00', 'system', 'tenant.create', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', NULL, '{"id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "name": "outbound", "status": "active", "created_at": "2026-11-28T18:36:19.273246Z"}');
INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (2, '2026-11-28 18:36:19.285679+00', 'system', 'account.create', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', '32428ea4-29a4-4fbc-abb5-40ae20cf2dad', NULL, '{"id": "32428ea4-29a4-4fbc-abb5-40ae20cf2dad", "status": "active", "settings": {}, "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "created_at": "2026-11-28T18:36:19.285679Z", "updated_at": "2026-11-28T18:36:19.285679Z", "external_id": "", "webhook_url": "http://mio.test/webhooks/slack/32428ea4-29a4-4fbc-abb5-40ae20cf2dad", "channel_type": "slack", "display_name": "slack", "has_credentials": true, "has_webhook_secret": true}');
INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (3, '2026-11-28 18:36:19.292482+00', 'system', 'account.create', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', '256fee44-5658-4c51-8c87-0b42c9a9787b', NULL, '{"id": "256fee44-5658-4c51-8c87-0b42c9a9787b", "status": "active", "settings": {}, "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "created_at": "2026-11-28T18:36:19.292482Z", "updated_at": "2026-11-28T18:36:19.292482Z", "external_id": "", "webhook_url": "http://mio.test/webhooks/telegram/256fee44-5658-4c51-8c87-0b42c9a9787b", "channel_type": "telegram", "display_name": "telegram", "has_credentials": true, "has_webhook_secret": true}');
INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (4, '2026-11-28 18:36:19.294295+00', 'system', 'account.create', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', '037ece70-b5ab-4a80-b11e-fb5a5f2ae964', NULL, '{"id": "037ece70-b5ab-4a80-b11e-fb5a5f2ae964", "status": "active", "settings": {}, "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "created_at": "2026-11-28T18:36:19.294295Z", "updated_at": "2026-11-28T18:36:19.294295Z", "external_id": "", "webhook_url": "http://mio.test/webhooks/discord/037ece70-b5ab-4a80-b11e-fb5a5f2ae964", "channel_type": "discord", "display_name": "discord", "has_credentials": true, "has_webhook_secret": true}');
INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (5, '2026-11-28 18:36:19.295536+00', 'system', 'account.create', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', '1ac7db6a-64a2-49e3-90af-48d753d0971a', NULL, '{"id": "1ac7db6a-64a2-49e3-90af-48d753d0971a", "status": "active", "settings": {}, "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "created_at": "2026-11-28T18:36:19.295536Z", "updated_at": "2026-11-28T18:36:19.295536Z", "external_id": "", "webhook_url": "http://mio.test/webhooks/zoho_cliq/1ac7db6a-64a2-49e3-90af-48d753d0971a", "channel_type": "zoho_cliq", "display_name": "zoho_cliq", "has_credentials": true, "has_webhook_secret": true}');
INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (6, '2026-11-28 18:36:19.297304+00', 'system', 'account.create', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', '33469f8c-f566-4c08-b485-82f4fcd172c3', NULL, '{"id": "33469f8c-f566-4c08-b485-82f4fcd172c3", "status": "active", "settings": {"phone_number_id": "5550001"}, "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "created_at": "2026-11-28T18:36:19.297304Z", "updated_at": "2026-11-28T18:36:19.297304Z", "external_id": "", "webhook_url": "http://mio.test/webhooks/whatsapp/33469f8c-f566-4c08-b485-82f4fcd172c3", "channel_type": "whatsapp", "display_name": "whatsapp", "has_credentials": true, "has_webhook_secret": true}');
INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (7, '2026-11-28 18:36:19.298586+00', 'system', 'account.create', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', NULL, '{"id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145", "status": "active", "settings": {"endpoint_url": "http://127.0.0.1:45799/webhook/in"}, "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "created_at": "2026-11-28T18:36:19.298586Z", "updated_at": "2026-11-28T18:36:19.298586Z", "external_id": "", "webhook_url": "http://mio.test/webhooks/webhook/395f7ecf-f7f3-4bc4-b0a1-b942eeb15145", "channel_type": "webhook", "display_name": "webhook", "has_credentials": false, "has_webhook_secret": true}');
INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (8, '2026-11-28 18:36:19.321523+00', 'system', 'api_token.create', 'ac8d79df-2c0d-40a9-83ac-de5f033298d4', '2ad2f1f0-a6d5-4bbc-bc30-928eadd98ba8', NULL, '{"id": "2ad2f1f0-a6d5-4bbc-bc30-928eadd98ba8", "name": "agent", "roles": ["consume", "produce", "read"], "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "created_at": "2026-11-28T18:36:19.321523Z"}');
INSERT INTO mio.audit_log (id, at, actor, action, tenant_id, target, before, after) OVERRIDING SYSTEM VALUE VALUES (9, '2026-11-28 18:36:19.325117+00', 'system', 'admin_token.create', NULL, '6ca5a6e5-5b6f-4b31-a617-1209ce521d28', NULL, '{"id": "6ca5a6e5-5b6f-4b31-a617-1209ce521d28", "name": "ops", "roles": ["operator"], "created_at": "2026-11-28T18:36:19.325117Z"}');


--
-- Data for Name: bridge_cursors; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.bridge_cursors (tenant_id, stream, log_lo, log_hi, after_xid, after_seq, updated_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'inbound', '819:825:819', NULL, '0', 0, '2026-11-28 18:36:21.125459+00');


--
-- Data for Name: bridge_settings; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.bridge_settings (tenant_id, publish, updated_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', true, '2026-11-28 18:36:21.124535+00');


--
-- Data for Name: consumer_deliveries; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.consumer_deliveries (tenant_id, consumer_name, message_id, message_seq, conversation_key, state, delivery_id, delivery_count, available_at, lease_expires_at, last_error, created_at, updated_at, pos) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'fragile', '01a22371-a300-7426-84c2-e2b2f85d7daf', 1, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145:conv-1', 'dead', NULL, 1, '2026-11-28 18:36:21.102064+00', NULL, 'max_deliver exceeded', '2026-11-28 18:36:21.102064+00', '2026-11-28 18:36:21.102064+00', 12288);
INSERT INTO mio.consumer_deliveries (tenant_id, consumer_name, message_id, message_seq, conversation_key, state, delivery_id, delivery_count, available_at, lease_expires_at, last_error, created_at, updated_at, pos) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'fragile', '01a22371-a300-77e5-9a9a-c21b2a227326', 2, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145:conv-1', 'dead', NULL, 1, '2026-11-28 18:36:21.102064+00', NULL, 'max_deliver exceeded', '2026-11-28 18:36:21.102064+00', '2026-11-28 18:36:21.102064+00', 12289);


--
-- Data for Name: consumer_id_epoch; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.consumer_id_epoch (one, started_at) VALUES (true, '2026-11-28 18:36:18.043122+00');


--
-- Data for Name: consumer_leases_0; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.consumer_leases_0 (tenant_id, consumer_name, gen, id, message_ids, expires_at, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'agent', 0, 2, '{01a22371-a300-7426-84c2-e2b2f85d7daf,01a22371-a300-77e5-9a9a-c21b2a227326,01a22371-a300-77f2-b497-b8864152a439}', '2026-11-28 19:36:19.588511+00', '2026-11-28 18:36:19.588511+00');
INSERT INTO mio.consumer_leases_0 (tenant_id, consumer_name, gen, id, message_ids, expires_at, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'fragile', 0, 3, '{01a22371-a300-7426-84c2-e2b2f85d7daf,01a22371-a300-77e5-9a9a-c21b2a227326}', '2026-11-28 18:36:20.598746+00', '2026-11-28 18:36:19.598746+00');
INSERT INTO mio.consumer_leases_0 (tenant_id, consumer_name, gen, id, message_ids, expires_at, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'fragile', 0, 4, '{01a22371-a300-77f2-b497-b8864152a439,01a22371-a300-77fc-9583-9574fbf6d098,01a22371-a300-7805-9130-a8a52ca52b15,01a22371-a300-780d-a54a-14a08bd92bd5}', '2026-11-28 18:36:22.102064+00', '2026-11-28 18:36:21.102064+00');


--
-- Data for Name: consumer_leases_1; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: consumer_leases_2; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: consumer_log_gen; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.consumer_log_gen (singleton, gen, next_clean, rotated_at) VALUES (true, 0, true, '2026-11-28 18:36:18.50108+00');


--
-- Data for Name: consumer_positions_0; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.consumer_positions_0 (tenant_id, consumer_name, gen, n, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at, written_at, taken) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'agent', 0, 1, '1:1:', '802:802:', '800', 3, 0, '2026-11-28 18:36:19.588511+00', '2026-11-28 18:36:19.588511+00', 3);
INSERT INTO mio.consumer_positions_0 (tenant_id, consumer_name, gen, n, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at, written_at, taken) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'fragile', 0, 2, '1:1:', '804:804:', '800', 2, 0, '2026-11-28 18:36:19.598746+00', '2026-11-28 18:36:19.598746+00', 2);
INSERT INTO mio.consumer_positions_0 (tenant_id, consumer_name, gen, n, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at, written_at, taken) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'fragile', 0, 3, '804:804:', NULL, '0', 0, 2, '2026-11-28 18:36:21.102064+00', '2026-11-28 18:36:21.102064+00', 6);


--
-- Data for Name: consumer_positions_1; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: consumer_positions_2; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: consumer_settles_0; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.consumer_settles_0 (tenant_id, consumer_name, gen, lease_id, idxs) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'agent', 0, 2, '{1,0}');
INSERT INTO mio.consumer_settles_0 (tenant_id, consumer_name, gen, lease_id, idxs) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'fragile', 0, 3, '{0,1}');


--
-- Data for Name: consumer_settles_1; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: consumer_settles_2; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: consumers; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.consumers (tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids, deliver_policy, start_time, ack_wait_ms, max_deliver, max_ack_pending, ordering, stage, cursor_xid, cursor_seq, last_delivered_at, created_at, updated_at, log_lo, log_hi, swept, taken, backlog_base) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'agent', '{}', '{}', '{}', 'all', NULL, 3600000, 5, 1000, 'none', 'ready', '0', 0, NULL, '2026-11-28 18:36:19.402942+00', '2026-11-28 18:36:19.402942+00', '1:1:', NULL, 0, 0, 0);
INSERT INTO mio.consumers (tenant_id, name, filter_channel_types, filter_account_ids, filter_conversation_ids, deliver_policy, start_time, ack_wait_ms, max_deliver, max_ack_pending, ordering, stage, cursor_xid, cursor_seq, last_delivered_at, created_at, updated_at, log_lo, log_hi, swept, taken, backlog_base) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'fragile', '{}', '{}', '{}', 'all', NULL, 1000, 1, 1000, 'none', 'ready', '0', 0, NULL, '2026-11-28 18:36:19.532172+00', '2026-11-28 18:36:19.532172+00', '1:1:', NULL, 0, 0, 0);


--
-- Data for Name: delivery_id_key; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.delivery_id_key (singleton, key, created_at) VALUES (true, '\x2a193b97c3c642fa94b52d11d3ce6cce27f018ff695b48c3b45f5e547603f585', '2026-11-28 18:36:18.572261+00');


--
-- Data for Name: gateway_sessions; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.gateway_sessions (tenant_id, account_id, holder, lease_until, session_id, resume_url, seq, identify_at, identifies, identify_window, error, updated_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '037ece70-b5ab-4a80-b11e-fb5a5f2ae964', NULL, '1970-01-01 00:00:00+00', 'sess-1', 'wss://gateway.test', 42, '1970-01-01 00:00:00+00', 0, '1970-01-01 00:00:00+00', '', '2026-11-28 18:36:21.126271+00');


--
-- Data for Name: inbound_dedup; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', '01a22371-a300-7426-84c2-e2b2f85d7daf', '01a22371-a300-7426-84c2-e2b2f85d7daf', '2026-11-28 18:36:19.584561+00');
INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', '01a22371-a300-77e5-9a9a-c21b2a227326', '01a22371-a300-77e5-9a9a-c21b2a227326', '2026-11-28 18:36:19.584561+00');
INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', '01a22371-a300-77f2-b497-b8864152a439', '01a22371-a300-77f2-b497-b8864152a439', '2026-11-28 18:36:19.584561+00');
INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', '01a22371-a300-77fc-9583-9574fbf6d098', '01a22371-a300-77fc-9583-9574fbf6d098', '2026-11-28 18:36:19.587309+00');
INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', '01a22371-a300-7805-9130-a8a52ca52b15', '01a22371-a300-7805-9130-a8a52ca52b15', '2026-11-28 18:36:19.587309+00');
INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', '01a22371-a300-780d-a54a-14a08bd92bd5', '01a22371-a300-780d-a54a-14a08bd92bd5', '2026-11-28 18:36:19.587309+00');
INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'evt-1', '01a22371-a300-7426-84c2-e2b2f85d7daf', '2026-11-28 18:36:21.128524+00');


--
-- Data for Name: inbound_refs; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.inbound_refs (tenant_id, account_id, conversation_id, platform_message_id, message_id, source_message_id, created_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'conv-1', 'pm-1', '01a22371-a300-7426-84c2-e2b2f85d7daf', 'evt-1', '2026-11-28 18:36:21.129164+00');


--
-- Data for Name: inbox_default; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: inbox_p20261128; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.inbox_p20261128 (tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '01a22371-a300-7426-84c2-e2b2f85d7daf', 1, '800', '800', 1, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'conv-1', '01a22371-a300-7426-84c2-e2b2f85d7daf', 'ready', '{"id": "01a22371-a300-7426-84c2-e2b2f85d7daf", "text": "in", "edited": false, "sender": {"id": "", "is_bot": false}, "deleted": false, "sent_at": "0001-01-01T00:00:00Z", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145", "attachments": [], "received_at": "0001-01-01T00:00:00Z", "channel_type": "webhook", "conversation": {"id": "conv-1", "type": "dm"}, "source_message_id": "01a22371-a300-7426-84c2-e2b2f85d7daf"}', '\x7b7d', '2026-11-28 18:36:19.584516+00', '2026-11-28 18:36:19.584516+00', NULL);
INSERT INTO mio.inbox_p20261128 (tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '01a22371-a300-77e5-9a9a-c21b2a227326', 2, '800', '800', 2, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'conv-1', '01a22371-a300-77e5-9a9a-c21b2a227326', 'ready', '{"id": "01a22371-a300-77e5-9a9a-c21b2a227326", "text": "in", "edited": false, "sender": {"id": "", "is_bot": false}, "deleted": false, "sent_at": "0001-01-01T00:00:00Z", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145", "attachments": [], "received_at": "0001-01-01T00:00:00Z", "channel_type": "webhook", "conversation": {"id": "conv-1", "type": "dm"}, "source_message_id": "01a22371-a300-77e5-9a9a-c21b2a227326"}', '\x7b7d', '2026-11-28 18:36:19.58452+00', '2026-11-28 18:36:19.58452+00', NULL);
INSERT INTO mio.inbox_p20261128 (tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '01a22371-a300-77f2-b497-b8864152a439', 3, '800', '800', 3, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'conv-1', '01a22371-a300-77f2-b497-b8864152a439', 'ready', '{"id": "01a22371-a300-77f2-b497-b8864152a439", "text": "in", "edited": false, "sender": {"id": "", "is_bot": false}, "deleted": false, "sent_at": "0001-01-01T00:00:00Z", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145", "attachments": [], "received_at": "0001-01-01T00:00:00Z", "channel_type": "webhook", "conversation": {"id": "conv-1", "type": "dm"}, "source_message_id": "01a22371-a300-77f2-b497-b8864152a439"}', '\x7b7d', '2026-11-28 18:36:19.584523+00', '2026-11-28 18:36:19.584523+00', NULL);
INSERT INTO mio.inbox_p20261128 (tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '01a22371-a300-77fc-9583-9574fbf6d098', 4, '801', '801', 4, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'conv-1', '01a22371-a300-77fc-9583-9574fbf6d098', 'ready', '{"id": "01a22371-a300-77fc-9583-9574fbf6d098", "text": "in", "edited": false, "sender": {"id": "", "is_bot": false}, "deleted": false, "sent_at": "0001-01-01T00:00:00Z", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145", "attachments": [], "received_at": "0001-01-01T00:00:00Z", "channel_type": "webhook", "conversation": {"id": "conv-1", "type": "dm"}, "source_message_id": "01a22371-a300-77fc-9583-9574fbf6d098"}', '\x7b7d', '2026-11-28 18:36:19.584525+00', '2026-11-28 18:36:19.584525+00', NULL);
INSERT INTO mio.inbox_p20261128 (tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '01a22371-a300-7805-9130-a8a52ca52b15', 5, '801', '801', 5, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'conv-1', '01a22371-a300-7805-9130-a8a52ca52b15', 'ready', '{"id": "01a22371-a300-7805-9130-a8a52ca52b15", "text": "in", "edited": false, "sender": {"id": "", "is_bot": false}, "deleted": false, "sent_at": "0001-01-01T00:00:00Z", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145", "attachments": [], "received_at": "0001-01-01T00:00:00Z", "channel_type": "webhook", "conversation": {"id": "conv-1", "type": "dm"}, "source_message_id": "01a22371-a300-7805-9130-a8a52ca52b15"}', '\x7b7d', '2026-11-28 18:36:19.584527+00', '2026-11-28 18:36:19.584527+00', NULL);
INSERT INTO mio.inbox_p20261128 (tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id, source_message_id, state, envelope, raw, received_at, ready_at, archived_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '01a22371-a300-780d-a54a-14a08bd92bd5', 6, '801', '801', 6, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'conv-1', '01a22371-a300-780d-a54a-14a08bd92bd5', 'ready', '{"id": "01a22371-a300-780d-a54a-14a08bd92bd5", "text": "in", "edited": false, "sender": {"id": "", "is_bot": false}, "deleted": false, "sent_at": "0001-01-01T00:00:00Z", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145", "attachments": [], "received_at": "0001-01-01T00:00:00Z", "channel_type": "webhook", "conversation": {"id": "conv-1", "type": "dm"}, "source_message_id": "01a22371-a300-780d-a54a-14a08bd92bd5"}', '\x7b7d', '2026-11-28 18:36:19.584529+00', '2026-11-28 18:36:19.584529+00', NULL);


--
-- Data for Name: inbox_p20261129; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: inbox_p20261130; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: inbox_p20261201; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: inbox_p20261202; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: inbox_p20261203; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: inbox_p20261204; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: inbox_p20261205; Type: TABLE DATA; Schema: mio; Owner: -
--



--
-- Data for Name: media_blobs; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.media_blobs (content_sha256, storage_key, size, refs, unreferenced_since, created_at) VALUES ('abababababababababababababababababababababababababababababababab', 'blobs/abababababababababababababababababababababababababababababababab', 5, 1, NULL, '2026-11-28 18:36:21.119511+00');


--
-- Data for Name: outbox; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.outbox (tenant_id, id, seq, account_id, channel_type, conversation_id, thread_id, idempotency_key, request_sha256, text, rich_content, attachments, edit_of, handoff_state, provider_state, attempt_no, series, series_first_attempt, attempts, next_attempt_at, lease_until, job_id, provider_message_id, receipts, last_error, receipt_due_at, created_at, updated_at, handed_off_at, dead_at, discarded_at) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '7cc4152b-2540-47a6-91a7-8c8b759141de', 1, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'c-ok', '', 'b44f0dcd-ff6b-4a68-9dc6-dd772e1ff506', '\x0000000000000000000000000000000000000000000000000000000000000000', 'delivered', NULL, NULL, NULL, 'handed_off', 'accepted', 1, 1, 1, 1, '2026-11-28 18:36:19.328344+00', NULL, 1, '1001', false, NULL, NULL, '2026-11-28 18:36:19.328344+00', '2026-11-28 18:36:19.355373+00', '2026-11-28 18:36:19.355373+00', NULL, NULL);
INSERT INTO mio.outbox (tenant_id, id, seq, account_id, channel_type, conversation_id, thread_id, idempotency_key, request_sha256, text, rich_content, attachments, edit_of, handoff_state, provider_state, attempt_no, series, series_first_attempt, attempts, next_attempt_at, lease_until, job_id, provider_message_id, receipts, last_error, receipt_due_at, created_at, updated_at, handed_off_at, dead_at, discarded_at) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'd2e6bc65-3029-429c-bb81-11202c212dbb', 2, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'dead-1', '', 'e393c0ed-63d5-4ce3-a4bc-eee18a35fc51', '\x0000000000000000000000000000000000000000000000000000000000000000', 'refused', NULL, NULL, NULL, 'dead', 'unknown', 1, 1, 1, 1, '2026-11-28 18:36:19.333717+00', NULL, 1, NULL, false, 'permanent: webhook: endpoint answered HTTP 400', NULL, '2026-11-28 18:36:19.333717+00', '2026-11-28 18:36:19.362651+00', NULL, '2026-11-28 18:36:19.362651+00', NULL);
INSERT INTO mio.outbox (tenant_id, id, seq, account_id, channel_type, conversation_id, thread_id, idempotency_key, request_sha256, text, rich_content, attachments, edit_of, handoff_state, provider_state, attempt_no, series, series_first_attempt, attempts, next_attempt_at, lease_until, job_id, provider_message_id, receipts, last_error, receipt_due_at, created_at, updated_at, handed_off_at, dead_at, discarded_at) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '83e8588f-5e31-4682-806e-7eb7b9643c75', 3, '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 'webhook', 'c-queued', '', '409c80a6-963d-41bb-a38f-ebc9c7e8a716', '\x0000000000000000000000000000000000000000000000000000000000000000', 'waiting 1', NULL, NULL, NULL, 'queued', 'unknown', 1, 1, 1, 0, '2026-11-28 18:36:19.394884+00', NULL, 3, NULL, false, NULL, NULL, '2026-11-28 18:36:19.394884+00', '2026-11-28 18:36:19.394884+00', NULL, NULL, NULL);
INSERT INTO mio.outbox (tenant_id, id, seq, account_id, channel_type, conversation_id, thread_id, idempotency_key, request_sha256, text, rich_content, attachments, edit_of, handoff_state, provider_state, attempt_no, series, series_first_attempt, attempts, next_attempt_at, lease_until, job_id, provider_message_id, receipts, last_error, receipt_due_at, created_at, updated_at, handed_off_at, dead_at, discarded_at) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '29e6be9d-1866-490b-830b-7bb7ba588274', 4, '32428ea4-29a4-4fbc-abb5-40ae20cf2dad', 'slack', 'C1', '', 'f9577a2f-0fe9-42d0-a2ad-94ea3c767fca', '\x0000000000000000000000000000000000000000000000000000000000000000', 'waiting 2', NULL, NULL, NULL, 'queued', 'unknown', 1, 1, 1, 0, '2026-11-28 18:36:19.396964+00', NULL, 4, NULL, false, NULL, NULL, '2026-11-28 18:36:19.396964+00', '2026-11-28 18:36:19.396964+00', NULL, NULL, NULL);


--
-- Data for Name: outbox_events; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '7cc4152b-2540-47a6-91a7-8c8b759141de', 1, 'queued', 'handoff', 'queued', 1, NULL, '2026-11-28 18:36:19.332969+00', '786');
INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'd2e6bc65-3029-429c-bb81-11202c212dbb', 2, 'queued', 'handoff', 'queued', 1, NULL, '2026-11-28 18:36:19.344662+00', '789');
INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '7cc4152b-2540-47a6-91a7-8c8b759141de', 3, 'sending', 'handoff', 'sending', 1, NULL, '2026-11-28 18:36:19.348447+00', '788');
INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'd2e6bc65-3029-429c-bb81-11202c212dbb', 4, 'sending', 'handoff', 'sending', 1, NULL, '2026-11-28 18:36:19.351166+00', '788');
INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '7cc4152b-2540-47a6-91a7-8c8b759141de', 5, 'handed_off', 'handoff', 'handed_off', 1, '{"operation": "send", "idempotency_key": "mio-7cc4152b-2540-47a6-91a7-8c8b759141de", "provider_message_id": "1001"}', '2026-11-28 18:36:19.358279+00', '791');
INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '7cc4152b-2540-47a6-91a7-8c8b759141de', 6, 'accepted', 'provider', 'accepted', 1, NULL, '2026-11-28 18:36:19.359803+00', '791');
INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'd2e6bc65-3029-429c-bb81-11202c212dbb', 7, 'dead', 'handoff', 'dead', 1, '{"error": "permanent: webhook: endpoint answered HTTP 400", "operation": "send"}', '2026-11-28 18:36:19.375057+00', '792');
INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '83e8588f-5e31-4682-806e-7eb7b9643c75', 8, 'queued', 'handoff', 'queued', 1, NULL, '2026-11-28 18:36:19.396468+00', '795');
INSERT INTO mio.outbox_events (tenant_id, outbox_id, id, event, machine, state, attempt_no, detail, at, xid) OVERRIDING SYSTEM VALUE VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '29e6be9d-1866-490b-830b-7bb7ba588274', 9, 'queued', 'handoff', 'queued', 1, NULL, '2026-11-28 18:36:19.400201+00', '796');


--
-- Data for Name: provider_events; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.provider_events (tenant_id, account_id, provider_message_id, status, occurred_at, recipient_id, error, raw, received_at, applied_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '33469f8c-f566-4c08-b485-82f4fcd172c3', 'wamid.1', 'delivered', '2026-11-28 18:36:21.130082+00', '', '', '{"status": "delivered"}', '2026-11-28 18:36:21.130082+00', NULL);


--
-- Data for Name: rate_buckets; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.rate_buckets (tenant_id, bucket_key, tokens, updated_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'account:32428ea4-29a4-4fbc-abb5-40ae20cf2dad', 3.5, '2026-11-28 18:36:21.130801+00');


--
-- Data for Name: source_cursors; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.source_cursors (tenant_id, account_id, conversation_id, conversation_type, last_source_id, active_at, gap_after, gap_before) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '32428ea4-29a4-4fbc-abb5-40ae20cf2dad', 'C1', 'channel', '1700000000.000100', '2026-11-28 18:36:21.127836+00', '1690000000.000100', '');


--
-- Data for Name: stream_counts; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'ready', 'webhook', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 3);
INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'received', 'webhook', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 3);
INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'ready', 'webhook', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 3);
INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'received', 'webhook', '395f7ecf-f7f3-4bc4-b0a1-b942eeb15145', 3);


--
-- Data for Name: telegram_pollers; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.telegram_pollers (tenant_id, account_id, next_offset, holder, lease_until, updated_at) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', '256fee44-5658-4c51-8c87-0b42c9a9787b', 1001, NULL, '-infinity', '2026-11-28 18:36:21.127065+00');


--
-- Data for Name: tenants; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.tenants (id, name, created_at, status) VALUES ('ac8d79df-2c0d-40a9-83ac-de5f033298d4', 'outbound', '2026-11-28 18:36:19.273246+00', 'active');


--
-- Data for Name: worker_heartbeats; Type: TABLE DATA; Schema: mio; Owner: -
--

INSERT INTO mio.worker_heartbeats (client_id, alive_since, expires_at) VALUES ('worker-gone', '2026-11-28 18:36:21.131134+00', '2026-11-28 18:35:21.131134+00');


--
-- Data for Name: mio_schema_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (1, 0, true, '2026-11-28 18:36:18.331682');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (2, 1, true, '2026-11-28 18:36:18.355328');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (3, 2, true, '2026-11-28 18:36:18.390581');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (4, 3, true, '2026-11-28 18:36:18.41775');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (5, 4, true, '2026-11-28 18:36:18.435066');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (6, 5, true, '2026-11-28 18:36:18.465054');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (7, 6, true, '2026-11-28 18:36:18.481786');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (8, 7, true, '2026-11-28 18:36:18.489142');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (9, 8, true, '2026-11-28 18:36:18.50108');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (10, 9, true, '2026-11-28 18:36:18.545594');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (11, 10, true, '2026-11-28 18:36:18.552649');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (12, 11, true, '2026-11-28 18:36:18.558702');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (13, 12, true, '2026-11-28 18:36:18.564905');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (14, 13, true, '2026-11-28 18:36:18.572261');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (15, 15, true, '2026-11-28 18:36:18.575851');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (16, 16, true, '2026-11-28 18:36:18.683936');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (17, 17, true, '2026-11-28 18:36:18.684575');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (18, 21, true, '2026-11-28 18:36:18.685902');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (19, 22, true, '2026-11-28 18:36:18.688677');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (20, 24, true, '2026-11-28 18:36:18.691855');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (21, 26, true, '2026-11-28 18:36:18.696014');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (22, 27, true, '2026-11-28 18:36:18.69766');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (23, 28, true, '2026-11-28 18:36:18.698453');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (24, 29, true, '2026-11-28 18:36:18.699406');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (25, 30, true, '2026-11-28 18:36:18.701213');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (26, 31, true, '2026-11-28 18:36:18.70165');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (27, 32, true, '2026-11-28 18:36:18.702706');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (28, 33, true, '2026-11-28 18:36:18.703766');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (29, 34, true, '2026-11-28 18:36:18.705651');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (30, 35, true, '2026-11-28 18:36:18.708703');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (31, 36, true, '2026-11-28 18:36:18.714587');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (32, 37, true, '2026-11-28 18:36:18.714997');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (33, 38, true, '2026-11-28 18:36:18.859486');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (34, 39, true, '2026-11-28 18:36:18.860253');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (35, 40, true, '2026-11-28 18:36:18.860688');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (36, 41, true, '2026-11-28 18:36:18.880911');
INSERT INTO public.mio_schema_migrations (id, version_id, is_applied, tstamp) VALUES (37, 42, true, '2026-11-28 18:36:18.883183');


--
-- Data for Name: river_job; Type: TABLE DATA; Schema: river; Owner: -
--

INSERT INTO river.river_job (id, state, attempt, max_attempts, attempted_at, created_at, finalized_at, scheduled_at, priority, args, attempted_by, errors, kind, metadata, queue, tags, unique_key, unique_states) VALUES (1, 'completed', 1, 25, '2026-11-28 18:36:19.334128+00', '2026-11-28 18:36:19.328521+00', '2026-11-28 18:36:19.382538+00', '2026-11-28 18:36:19.328521+00', 1, '{"outbox_id": "7cc4152b-2540-47a6-91a7-8c8b759141de", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145"}', '{vm_2026_11_28T18_36_19_307806}', NULL, 'mio.dispatch', '{}', 'dispatch', '{}', NULL, NULL);
INSERT INTO river.river_job (id, state, attempt, max_attempts, attempted_at, created_at, finalized_at, scheduled_at, priority, args, attempted_by, errors, kind, metadata, queue, tags, unique_key, unique_states) VALUES (3, 'available', 0, 25, NULL, '2026-11-28 18:36:19.395151+00', NULL, '2026-11-28 18:36:19.395151+00', 1, '{"outbox_id": "83e8588f-5e31-4682-806e-7eb7b9643c75", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "395f7ecf-f7f3-4bc4-b0a1-b942eeb15145"}', NULL, NULL, 'mio.dispatch', '{}', 'dispatch', '{}', NULL, NULL);
INSERT INTO river.river_job (id, state, attempt, max_attempts, attempted_at, created_at, finalized_at, scheduled_at, priority, args, attempted_by, errors, kind, metadata, queue, tags, unique_key, unique_states) VALUES (4, 'available', 0, 25, NULL, '2026-11-28 18:36:19.397049+00', NULL, '2026-11-28 18:36:19.397049+00', 1, '{"outbox_id": "29e6be9d-1866-490b-830b-7bb7ba588274", "tenant_id": "ac8d79df-2c0d-40a9-83ac-de5f033298d4", "account_id": "32428ea4-29a4-4fbc-abb5-40ae20cf2dad"}', NULL, NULL, 'mio.dispatch', '{}', 'dispatch', '{}', NULL, NULL);


--
-- Data for Name: river_leader; Type: TABLE DATA; Schema: river; Owner: -
--



--
-- Data for Name: river_migration; Type: TABLE DATA; Schema: river; Owner: -
--

INSERT INTO river.river_migration (line, version, created_at) VALUES ('main', 1, '2026-11-28 18:36:18.888299+00');
INSERT INTO river.river_migration (line, version, created_at) VALUES ('main', 2, '2026-11-28 18:36:18.891793+00');
INSERT INTO river.river_migration (line, version, created_at) VALUES ('main', 3, '2026-11-28 18:36:18.903263+00');
INSERT INTO river.river_migration (line, version, created_at) VALUES ('main', 4, '2026-11-28 18:36:18.904326+00');
INSERT INTO river.river_migration (line, version, created_at) VALUES ('main', 5, '2026-11-28 18:36:18.908451+00');
INSERT INTO river.river_migration (line, version, created_at) VALUES ('main', 6, '2026-11-28 18:36:18.922827+00');
INSERT INTO river.river_migration (line, version, created_at) VALUES ('main', 7, '2026-11-28 18:36:18.92514+00');
INSERT INTO river.river_migration (line, version, created_at) VALUES ('main', 8, '2026-11-28 18:36:18.931588+00');


--
-- Data for Name: river_notification; Type: TABLE DATA; Schema: river; Owner: -
--



--
-- Data for Name: river_queue; Type: TABLE DATA; Schema: river; Owner: -
--

INSERT INTO river.river_queue (name, created_at, metadata, paused_at, updated_at) VALUES ('dispatch', '2026-11-28 18:36:19.318575+00', '{}', NULL, '2026-11-28 18:36:19.318575+00');


--
-- Name: audit_log_id_seq; Type: SEQUENCE SET; Schema: mio; Owner: -
--

SELECT pg_catalog.setval('mio.audit_log_id_seq', 9, true);


--
-- Name: consumer_position_ids; Type: SEQUENCE SET; Schema: mio; Owner: -
--

SELECT pg_catalog.setval('mio.consumer_position_ids', 3, true);


--
-- Name: consumer_take_ids; Type: SEQUENCE SET; Schema: mio; Owner: -
--

SELECT pg_catalog.setval('mio.consumer_take_ids', 4, true);


--
-- Name: inbox_ready_seq; Type: SEQUENCE SET; Schema: mio; Owner: -
--

SELECT pg_catalog.setval('mio.inbox_ready_seq', 6, true);


--
-- Name: inbox_seq; Type: SEQUENCE SET; Schema: mio; Owner: -
--

SELECT pg_catalog.setval('mio.inbox_seq', 6, true);


--
-- Name: outbox_events_id_seq; Type: SEQUENCE SET; Schema: mio; Owner: -
--

SELECT pg_catalog.setval('mio.outbox_events_id_seq', 9, true);


--
-- Name: outbox_seq_seq; Type: SEQUENCE SET; Schema: mio; Owner: -
--

SELECT pg_catalog.setval('mio.outbox_seq_seq', 4, true);


--
-- Name: mio_schema_migrations_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.mio_schema_migrations_id_seq', 37, true);


--
-- Name: river_job_id_seq; Type: SEQUENCE SET; Schema: river; Owner: -
--

SELECT pg_catalog.setval('river.river_job_id_seq', 4, true);


--
-- Name: river_notification_id_seq; Type: SEQUENCE SET; Schema: river; Owner: -
--

SELECT pg_catalog.setval('river.river_notification_id_seq', 1, false);


--
-- Name: account_access_tokens account_access_tokens_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.account_access_tokens
    ADD CONSTRAINT account_access_tokens_pkey PRIMARY KEY (tenant_id, account_id);


--
-- Name: account_routes account_routes_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.account_routes
    ADD CONSTRAINT account_routes_pkey PRIMARY KEY (account_id);


--
-- Name: accounts accounts_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: admin_tokens admin_tokens_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.admin_tokens
    ADD CONSTRAINT admin_tokens_pkey PRIMARY KEY (id);


--
-- Name: admin_tokens admin_tokens_token_sha256_key; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.admin_tokens
    ADD CONSTRAINT admin_tokens_token_sha256_key UNIQUE (token_sha256);


--
-- Name: api_tokens api_tokens_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: api_tokens api_tokens_tenant_id_token_sha256_key; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.api_tokens
    ADD CONSTRAINT api_tokens_tenant_id_token_sha256_key UNIQUE (tenant_id, token_sha256);


--
-- Name: archive_cursors archive_cursors_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.archive_cursors
    ADD CONSTRAINT archive_cursors_pkey PRIMARY KEY (tenant_id);


--
-- Name: archive_parts archive_parts_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.archive_parts
    ADD CONSTRAINT archive_parts_pkey PRIMARY KEY (tenant_id, object_key);


--
-- Name: attachments attachments_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.attachments
    ADD CONSTRAINT attachments_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: audit_log audit_log_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.audit_log
    ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id);


--
-- Name: bridge_cursors bridge_cursors_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.bridge_cursors
    ADD CONSTRAINT bridge_cursors_pkey PRIMARY KEY (tenant_id, stream);


--
-- Name: bridge_settings bridge_settings_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.bridge_settings
    ADD CONSTRAINT bridge_settings_pkey PRIMARY KEY (tenant_id);


--
-- Name: consumer_deliveries consumer_deliveries_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_deliveries
    ADD CONSTRAINT consumer_deliveries_pkey PRIMARY KEY (tenant_id, consumer_name, message_id);


--
-- Name: consumer_id_epoch consumer_id_epoch_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_id_epoch
    ADD CONSTRAINT consumer_id_epoch_pkey PRIMARY KEY (one);


--
-- Name: consumer_leases consumer_leases_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_leases
    ADD CONSTRAINT consumer_leases_pkey PRIMARY KEY (tenant_id, consumer_name, id, gen);


--
-- Name: consumer_leases_0 consumer_leases_0_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_leases_0
    ADD CONSTRAINT consumer_leases_0_pkey PRIMARY KEY (tenant_id, consumer_name, id, gen);


--
-- Name: consumer_leases_1 consumer_leases_1_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_leases_1
    ADD CONSTRAINT consumer_leases_1_pkey PRIMARY KEY (tenant_id, consumer_name, id, gen);


--
-- Name: consumer_leases_2 consumer_leases_2_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_leases_2
    ADD CONSTRAINT consumer_leases_2_pkey PRIMARY KEY (tenant_id, consumer_name, id, gen);


--
-- Name: consumer_log_gen consumer_log_gen_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_log_gen
    ADD CONSTRAINT consumer_log_gen_pkey PRIMARY KEY (singleton);


--
-- Name: consumer_positions consumer_positions_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_positions
    ADD CONSTRAINT consumer_positions_pkey PRIMARY KEY (tenant_id, consumer_name, n, gen);


--
-- Name: consumer_positions_0 consumer_positions_0_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_positions_0
    ADD CONSTRAINT consumer_positions_0_pkey PRIMARY KEY (tenant_id, consumer_name, n, gen);


--
-- Name: consumer_positions_1 consumer_positions_1_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_positions_1
    ADD CONSTRAINT consumer_positions_1_pkey PRIMARY KEY (tenant_id, consumer_name, n, gen);


--
-- Name: consumer_positions_2 consumer_positions_2_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_positions_2
    ADD CONSTRAINT consumer_positions_2_pkey PRIMARY KEY (tenant_id, consumer_name, n, gen);


--
-- Name: consumers consumers_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumers
    ADD CONSTRAINT consumers_pkey PRIMARY KEY (tenant_id, name);


--
-- Name: delivery_id_key delivery_id_key_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.delivery_id_key
    ADD CONSTRAINT delivery_id_key_pkey PRIMARY KEY (singleton);


--
-- Name: gateway_sessions gateway_sessions_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.gateway_sessions
    ADD CONSTRAINT gateway_sessions_pkey PRIMARY KEY (tenant_id, account_id);


--
-- Name: inbound_dedup inbound_dedup_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbound_dedup
    ADD CONSTRAINT inbound_dedup_pkey PRIMARY KEY (tenant_id, account_id, source_message_id);


--
-- Name: inbound_refs inbound_refs_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbound_refs
    ADD CONSTRAINT inbound_refs_pkey PRIMARY KEY (tenant_id, account_id, conversation_id, platform_message_id);


--
-- Name: inbox inbox_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox
    ADD CONSTRAINT inbox_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_default inbox_default_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_default
    ADD CONSTRAINT inbox_default_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_p20261128 inbox_p20261128_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_p20261128
    ADD CONSTRAINT inbox_p20261128_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_p20261129 inbox_p20261129_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_p20261129
    ADD CONSTRAINT inbox_p20261129_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_p20261130 inbox_p20261130_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_p20261130
    ADD CONSTRAINT inbox_p20261130_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_p20261201 inbox_p20261201_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_p20261201
    ADD CONSTRAINT inbox_p20261201_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_p20261202 inbox_p20261202_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_p20261202
    ADD CONSTRAINT inbox_p20261202_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_p20261203 inbox_p20261203_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_p20261203
    ADD CONSTRAINT inbox_p20261203_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_p20261204 inbox_p20261204_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_p20261204
    ADD CONSTRAINT inbox_p20261204_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: inbox_p20261205 inbox_p20261205_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.inbox_p20261205
    ADD CONSTRAINT inbox_p20261205_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: media_blobs media_blobs_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.media_blobs
    ADD CONSTRAINT media_blobs_pkey PRIMARY KEY (content_sha256);


--
-- Name: outbox_events outbox_events_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.outbox_events
    ADD CONSTRAINT outbox_events_pkey PRIMARY KEY (tenant_id, outbox_id, id);


--
-- Name: outbox outbox_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: outbox outbox_tenant_id_idempotency_key_key; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.outbox
    ADD CONSTRAINT outbox_tenant_id_idempotency_key_key UNIQUE (tenant_id, idempotency_key);


--
-- Name: provider_events provider_events_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.provider_events
    ADD CONSTRAINT provider_events_pkey PRIMARY KEY (tenant_id, account_id, provider_message_id, status);


--
-- Name: rate_buckets rate_buckets_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.rate_buckets
    ADD CONSTRAINT rate_buckets_pkey PRIMARY KEY (tenant_id, bucket_key);


--
-- Name: source_cursors source_cursors_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.source_cursors
    ADD CONSTRAINT source_cursors_pkey PRIMARY KEY (tenant_id, account_id, conversation_id);


--
-- Name: telegram_pollers telegram_pollers_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.telegram_pollers
    ADD CONSTRAINT telegram_pollers_pkey PRIMARY KEY (tenant_id, account_id);


--
-- Name: tenants tenants_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.tenants
    ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);


--
-- Name: worker_heartbeats worker_heartbeats_pkey; Type: CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.worker_heartbeats
    ADD CONSTRAINT worker_heartbeats_pkey PRIMARY KEY (client_id);


--
-- Name: mio_schema_migrations mio_schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mio_schema_migrations
    ADD CONSTRAINT mio_schema_migrations_pkey PRIMARY KEY (id);


--
-- Name: river_job river_job_pkey; Type: CONSTRAINT; Schema: river; Owner: -
--

ALTER TABLE ONLY river.river_job
    ADD CONSTRAINT river_job_pkey PRIMARY KEY (id);


--
-- Name: river_leader river_leader_pkey; Type: CONSTRAINT; Schema: river; Owner: -
--

ALTER TABLE ONLY river.river_leader
    ADD CONSTRAINT river_leader_pkey PRIMARY KEY (name);


--
-- Name: river_migration river_migration_pkey1; Type: CONSTRAINT; Schema: river; Owner: -
--

ALTER TABLE ONLY river.river_migration
    ADD CONSTRAINT river_migration_pkey1 PRIMARY KEY (line, version);


--
-- Name: river_notification river_notification_pkey; Type: CONSTRAINT; Schema: river; Owner: -
--

ALTER TABLE ONLY river.river_notification
    ADD CONSTRAINT river_notification_pkey PRIMARY KEY (id);


--
-- Name: river_queue river_queue_pkey; Type: CONSTRAINT; Schema: river; Owner: -
--

ALTER TABLE ONLY river.river_queue
    ADD CONSTRAINT river_queue_pkey PRIMARY KEY (name);


--
-- Name: accounts_tenant_channel; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX accounts_tenant_channel ON mio.accounts USING btree (tenant_id, channel_type, status);


--
-- Name: archive_parts_written; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX archive_parts_written ON mio.archive_parts USING btree (tenant_id, written_at);


--
-- Name: attachments_failed; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX attachments_failed ON mio.attachments USING btree (tenant_id, created_at) WHERE (status = 'failed'::text);


--
-- Name: attachments_message; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX attachments_message ON mio.attachments USING btree (tenant_id, message_id);


--
-- Name: audit_log_tenant; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX audit_log_tenant ON mio.audit_log USING btree (tenant_id, id) WHERE (tenant_id IS NOT NULL);


--
-- Name: consumer_deliveries_conversation; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX consumer_deliveries_conversation ON mio.consumer_deliveries USING btree (tenant_id, consumer_name, conversation_key, pos) WHERE (state <> 'dead'::text);


--
-- Name: consumer_deliveries_dead; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX consumer_deliveries_dead ON mio.consumer_deliveries USING btree (tenant_id, message_id) WHERE (state = 'dead'::text);


--
-- Name: consumer_deliveries_delivery; Type: INDEX; Schema: mio; Owner: -
--

CREATE UNIQUE INDEX consumer_deliveries_delivery ON mio.consumer_deliveries USING btree (tenant_id, delivery_id) WHERE (delivery_id IS NOT NULL);


--
-- Name: consumer_deliveries_lease_due; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX consumer_deliveries_lease_due ON mio.consumer_deliveries USING btree (tenant_id, consumer_name, lease_expires_at) WHERE (state = 'leased'::text);


--
-- Name: consumer_deliveries_pending_due; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX consumer_deliveries_pending_due ON mio.consumer_deliveries USING btree (tenant_id, consumer_name, available_at) WHERE (state = 'pending'::text);


--
-- Name: consumer_settles_lease; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX consumer_settles_lease ON ONLY mio.consumer_settles USING btree (tenant_id, consumer_name, lease_id);


--
-- Name: consumer_settles_0_tenant_id_consumer_name_lease_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX consumer_settles_0_tenant_id_consumer_name_lease_id_idx ON mio.consumer_settles_0 USING btree (tenant_id, consumer_name, lease_id);


--
-- Name: consumer_settles_1_tenant_id_consumer_name_lease_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX consumer_settles_1_tenant_id_consumer_name_lease_id_idx ON mio.consumer_settles_1 USING btree (tenant_id, consumer_name, lease_id);


--
-- Name: consumer_settles_2_tenant_id_consumer_name_lease_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX consumer_settles_2_tenant_id_consumer_name_lease_id_idx ON mio.consumer_settles_2 USING btree (tenant_id, consumer_name, lease_id);


--
-- Name: inbound_dedup_created; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbound_dedup_created ON mio.inbound_dedup USING btree (created_at);


--
-- Name: inbound_refs_created; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbound_refs_created ON mio.inbound_refs USING btree (created_at);


--
-- Name: inbox_received_at; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_received_at ON ONLY mio.inbox USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_default_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_default_received_at_idx ON mio.inbox_default USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_unready; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_unready ON ONLY mio.inbox USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_default_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_default_tenant_id_idx ON mio.inbox_default USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_ready_stream; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_ready_stream ON ONLY mio.inbox USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_default_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_default_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_default USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_received_stream; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_received_stream ON ONLY mio.inbox USING btree (tenant_id, xid, seq);


--
-- Name: inbox_default_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_default_tenant_id_xid_seq_idx ON mio.inbox_default USING btree (tenant_id, xid, seq);


--
-- Name: inbox_p20261128_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261128_received_at_idx ON mio.inbox_p20261128 USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_p20261128_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261128_tenant_id_idx ON mio.inbox_p20261128 USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_p20261128_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261128_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_p20261128 USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_p20261128_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261128_tenant_id_xid_seq_idx ON mio.inbox_p20261128 USING btree (tenant_id, xid, seq);


--
-- Name: inbox_p20261129_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261129_received_at_idx ON mio.inbox_p20261129 USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_p20261129_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261129_tenant_id_idx ON mio.inbox_p20261129 USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_p20261129_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261129_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_p20261129 USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_p20261129_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261129_tenant_id_xid_seq_idx ON mio.inbox_p20261129 USING btree (tenant_id, xid, seq);


--
-- Name: inbox_p20261130_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261130_received_at_idx ON mio.inbox_p20261130 USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_p20261130_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261130_tenant_id_idx ON mio.inbox_p20261130 USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_p20261130_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261130_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_p20261130 USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_p20261130_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261130_tenant_id_xid_seq_idx ON mio.inbox_p20261130 USING btree (tenant_id, xid, seq);


--
-- Name: inbox_p20261201_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261201_received_at_idx ON mio.inbox_p20261201 USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_p20261201_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261201_tenant_id_idx ON mio.inbox_p20261201 USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_p20261201_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261201_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_p20261201 USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_p20261201_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261201_tenant_id_xid_seq_idx ON mio.inbox_p20261201 USING btree (tenant_id, xid, seq);


--
-- Name: inbox_p20261202_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261202_received_at_idx ON mio.inbox_p20261202 USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_p20261202_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261202_tenant_id_idx ON mio.inbox_p20261202 USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_p20261202_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261202_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_p20261202 USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_p20261202_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261202_tenant_id_xid_seq_idx ON mio.inbox_p20261202 USING btree (tenant_id, xid, seq);


--
-- Name: inbox_p20261203_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261203_received_at_idx ON mio.inbox_p20261203 USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_p20261203_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261203_tenant_id_idx ON mio.inbox_p20261203 USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_p20261203_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261203_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_p20261203 USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_p20261203_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261203_tenant_id_xid_seq_idx ON mio.inbox_p20261203 USING btree (tenant_id, xid, seq);


--
-- Name: inbox_p20261204_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261204_received_at_idx ON mio.inbox_p20261204 USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_p20261204_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261204_tenant_id_idx ON mio.inbox_p20261204 USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_p20261204_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261204_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_p20261204 USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_p20261204_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261204_tenant_id_xid_seq_idx ON mio.inbox_p20261204 USING btree (tenant_id, xid, seq);


--
-- Name: inbox_p20261205_received_at_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261205_received_at_idx ON mio.inbox_p20261205 USING brin (received_at) WITH (autosummarize='on');


--
-- Name: inbox_p20261205_tenant_id_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261205_tenant_id_idx ON mio.inbox_p20261205 USING btree (tenant_id) WHERE (ready_xid IS NULL);


--
-- Name: inbox_p20261205_tenant_id_ready_xid_ready_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261205_tenant_id_ready_xid_ready_seq_idx ON mio.inbox_p20261205 USING btree (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);


--
-- Name: inbox_p20261205_tenant_id_xid_seq_idx; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX inbox_p20261205_tenant_id_xid_seq_idx ON mio.inbox_p20261205 USING btree (tenant_id, xid, seq);


--
-- Name: media_blobs_unreferenced; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX media_blobs_unreferenced ON mio.media_blobs USING btree (unreferenced_since) WHERE (refs = 0);


--
-- Name: outbox_dead; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX outbox_dead ON mio.outbox USING btree (tenant_id, dead_at) WHERE ((dead_at IS NOT NULL) AND (discarded_at IS NULL));


--
-- Name: outbox_due; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX outbox_due ON mio.outbox USING btree (tenant_id, next_attempt_at) WHERE active;


--
-- Name: outbox_events_stream; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX outbox_events_stream ON mio.outbox_events USING btree (tenant_id, xid, id);


--
-- Name: outbox_lane; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX outbox_lane ON mio.outbox USING btree (tenant_id, account_id, conversation_id, seq) WHERE active;


--
-- Name: outbox_provider_message; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX outbox_provider_message ON mio.outbox USING btree (tenant_id, account_id, provider_message_id) WHERE receipts;


--
-- Name: outbox_receipt_due; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX outbox_receipt_due ON mio.outbox USING btree (tenant_id, receipt_due_at) WHERE (receipt_due_at IS NOT NULL);


--
-- Name: provider_events_unapplied; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX provider_events_unapplied ON mio.provider_events USING btree (received_at) WHERE (applied_at IS NULL);


--
-- Name: stream_counts_key; Type: INDEX; Schema: mio; Owner: -
--

CREATE INDEX stream_counts_key ON mio.stream_counts USING btree (tenant_id, stage, channel_type, account_id) INCLUDE (n);


--
-- Name: tenants_lower_name_key; Type: INDEX; Schema: mio; Owner: -
--

CREATE UNIQUE INDEX tenants_lower_name_key ON mio.tenants USING btree (lower(name));


--
-- Name: river_job_args_index; Type: INDEX; Schema: river; Owner: -
--

CREATE INDEX river_job_args_index ON river.river_job USING gin (args);


--
-- Name: river_job_kind; Type: INDEX; Schema: river; Owner: -
--

CREATE INDEX river_job_kind ON river.river_job USING btree (kind);


--
-- Name: river_job_metadata_index; Type: INDEX; Schema: river; Owner: -
--

CREATE INDEX river_job_metadata_index ON river.river_job USING gin (metadata);


--
-- Name: river_job_prioritized_fetching_index; Type: INDEX; Schema: river; Owner: -
--

CREATE INDEX river_job_prioritized_fetching_index ON river.river_job USING btree (state, queue, priority, scheduled_at, id);


--
-- Name: river_job_state_and_finalized_at_index; Type: INDEX; Schema: river; Owner: -
--

CREATE INDEX river_job_state_and_finalized_at_index ON river.river_job USING btree (state, finalized_at) WHERE (finalized_at IS NOT NULL);


--
-- Name: river_job_unique_idx; Type: INDEX; Schema: river; Owner: -
--

CREATE UNIQUE INDEX river_job_unique_idx ON river.river_job USING btree (unique_key) WHERE ((unique_key IS NOT NULL) AND (unique_states IS NOT NULL) AND river.river_job_state_in_bitmask(unique_states, state));


--
-- Name: river_notification_created_at_idx; Type: INDEX; Schema: river; Owner: -
--

CREATE INDEX river_notification_created_at_idx ON river.river_notification USING btree (created_at);


--
-- Name: river_notification_topic_id_idx; Type: INDEX; Schema: river; Owner: -
--

CREATE INDEX river_notification_topic_id_idx ON river.river_notification USING btree (topic, id);


--
-- Name: consumer_leases_0_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_leases_pkey ATTACH PARTITION mio.consumer_leases_0_pkey;


--
-- Name: consumer_leases_1_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_leases_pkey ATTACH PARTITION mio.consumer_leases_1_pkey;


--
-- Name: consumer_leases_2_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_leases_pkey ATTACH PARTITION mio.consumer_leases_2_pkey;


--
-- Name: consumer_positions_0_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_positions_pkey ATTACH PARTITION mio.consumer_positions_0_pkey;


--
-- Name: consumer_positions_1_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_positions_pkey ATTACH PARTITION mio.consumer_positions_1_pkey;


--
-- Name: consumer_positions_2_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_positions_pkey ATTACH PARTITION mio.consumer_positions_2_pkey;


--
-- Name: consumer_settles_0_tenant_id_consumer_name_lease_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_settles_lease ATTACH PARTITION mio.consumer_settles_0_tenant_id_consumer_name_lease_id_idx;


--
-- Name: consumer_settles_1_tenant_id_consumer_name_lease_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_settles_lease ATTACH PARTITION mio.consumer_settles_1_tenant_id_consumer_name_lease_id_idx;


--
-- Name: consumer_settles_2_tenant_id_consumer_name_lease_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.consumer_settles_lease ATTACH PARTITION mio.consumer_settles_2_tenant_id_consumer_name_lease_id_idx;


--
-- Name: inbox_default_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_default_pkey;


--
-- Name: inbox_default_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_default_received_at_idx;


--
-- Name: inbox_default_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_default_tenant_id_idx;


--
-- Name: inbox_default_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_default_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_default_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_default_tenant_id_xid_seq_idx;


--
-- Name: inbox_p20261128_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_p20261128_pkey;


--
-- Name: inbox_p20261128_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_p20261128_received_at_idx;


--
-- Name: inbox_p20261128_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_p20261128_tenant_id_idx;


--
-- Name: inbox_p20261128_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_p20261128_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_p20261128_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_p20261128_tenant_id_xid_seq_idx;


--
-- Name: inbox_p20261129_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_p20261129_pkey;


--
-- Name: inbox_p20261129_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_p20261129_received_at_idx;


--
-- Name: inbox_p20261129_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_p20261129_tenant_id_idx;


--
-- Name: inbox_p20261129_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_p20261129_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_p20261129_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_p20261129_tenant_id_xid_seq_idx;


--
-- Name: inbox_p20261130_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_p20261130_pkey;


--
-- Name: inbox_p20261130_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_p20261130_received_at_idx;


--
-- Name: inbox_p20261130_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_p20261130_tenant_id_idx;


--
-- Name: inbox_p20261130_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_p20261130_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_p20261130_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_p20261130_tenant_id_xid_seq_idx;


--
-- Name: inbox_p20261201_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_p20261201_pkey;


--
-- Name: inbox_p20261201_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_p20261201_received_at_idx;


--
-- Name: inbox_p20261201_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_p20261201_tenant_id_idx;


--
-- Name: inbox_p20261201_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_p20261201_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_p20261201_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_p20261201_tenant_id_xid_seq_idx;


--
-- Name: inbox_p20261202_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_p20261202_pkey;


--
-- Name: inbox_p20261202_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_p20261202_received_at_idx;


--
-- Name: inbox_p20261202_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_p20261202_tenant_id_idx;


--
-- Name: inbox_p20261202_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_p20261202_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_p20261202_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_p20261202_tenant_id_xid_seq_idx;


--
-- Name: inbox_p20261203_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_p20261203_pkey;


--
-- Name: inbox_p20261203_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_p20261203_received_at_idx;


--
-- Name: inbox_p20261203_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_p20261203_tenant_id_idx;


--
-- Name: inbox_p20261203_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_p20261203_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_p20261203_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_p20261203_tenant_id_xid_seq_idx;


--
-- Name: inbox_p20261204_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_p20261204_pkey;


--
-- Name: inbox_p20261204_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_p20261204_received_at_idx;


--
-- Name: inbox_p20261204_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_p20261204_tenant_id_idx;


--
-- Name: inbox_p20261204_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_p20261204_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_p20261204_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_p20261204_tenant_id_xid_seq_idx;


--
-- Name: inbox_p20261205_pkey; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_pkey ATTACH PARTITION mio.inbox_p20261205_pkey;


--
-- Name: inbox_p20261205_received_at_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_at ATTACH PARTITION mio.inbox_p20261205_received_at_idx;


--
-- Name: inbox_p20261205_tenant_id_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_unready ATTACH PARTITION mio.inbox_p20261205_tenant_id_idx;


--
-- Name: inbox_p20261205_tenant_id_ready_xid_ready_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_ready_stream ATTACH PARTITION mio.inbox_p20261205_tenant_id_ready_xid_ready_seq_idx;


--
-- Name: inbox_p20261205_tenant_id_xid_seq_idx; Type: INDEX ATTACH; Schema: mio; Owner: -
--

ALTER INDEX mio.inbox_received_stream ATTACH PARTITION mio.inbox_p20261205_tenant_id_xid_seq_idx;


--
-- Name: accounts accounts_route; Type: TRIGGER; Schema: mio; Owner: -
--

CREATE TRIGGER accounts_route AFTER INSERT OR DELETE OR UPDATE ON mio.accounts FOR EACH ROW EXECUTE FUNCTION mio.accounts_route();


--
-- Name: inbox inbox_stream_counts_insert; Type: TRIGGER; Schema: mio; Owner: -
--

CREATE TRIGGER inbox_stream_counts_insert AFTER INSERT ON mio.inbox REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mio.stream_counts_inserted();


--
-- Name: inbox inbox_stream_counts_update; Type: TRIGGER; Schema: mio; Owner: -
--

CREATE TRIGGER inbox_stream_counts_update AFTER UPDATE ON mio.inbox REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mio.stream_counts_made_ready();


--
-- Name: account_access_tokens account_access_tokens_tenant_id_account_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.account_access_tokens
    ADD CONSTRAINT account_access_tokens_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE;


--
-- Name: accounts accounts_tenant_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.accounts
    ADD CONSTRAINT accounts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id);


--
-- Name: api_tokens api_tokens_tenant_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.api_tokens
    ADD CONSTRAINT api_tokens_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id);


--
-- Name: archive_cursors archive_cursors_tenant_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.archive_cursors
    ADD CONSTRAINT archive_cursors_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id);


--
-- Name: bridge_settings bridge_settings_tenant_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.bridge_settings
    ADD CONSTRAINT bridge_settings_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id) ON DELETE CASCADE;


--
-- Name: consumer_deliveries consumer_deliveries_tenant_id_consumer_name_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumer_deliveries
    ADD CONSTRAINT consumer_deliveries_tenant_id_consumer_name_fkey FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers(tenant_id, name) ON DELETE CASCADE;


--
-- Name: consumer_leases consumer_leases_tenant_id_consumer_name_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_leases
    ADD CONSTRAINT consumer_leases_tenant_id_consumer_name_fkey FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers(tenant_id, name) ON DELETE CASCADE;


--
-- Name: consumer_positions consumer_positions_tenant_id_consumer_name_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_positions
    ADD CONSTRAINT consumer_positions_tenant_id_consumer_name_fkey FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers(tenant_id, name) ON DELETE CASCADE;


--
-- Name: consumers consumers_tenant_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.consumers
    ADD CONSTRAINT consumers_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id);


--
-- Name: gateway_sessions gateway_sessions_tenant_id_account_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.gateway_sessions
    ADD CONSTRAINT gateway_sessions_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE;


--
-- Name: inbox inbox_tenant_id_account_id_fkey1; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox
    ADD CONSTRAINT inbox_tenant_id_account_id_fkey1 FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id);


--
-- Name: outbox outbox_tenant_id_account_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.outbox
    ADD CONSTRAINT outbox_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id);


--
-- Name: outbox outbox_tenant_id_edit_of_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.outbox
    ADD CONSTRAINT outbox_tenant_id_edit_of_fkey FOREIGN KEY (tenant_id, edit_of) REFERENCES mio.outbox(tenant_id, id);


--
-- Name: source_cursors source_cursors_tenant_id_account_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.source_cursors
    ADD CONSTRAINT source_cursors_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE;


--
-- Name: telegram_pollers telegram_pollers_tenant_id_account_id_fkey; Type: FK CONSTRAINT; Schema: mio; Owner: -
--

ALTER TABLE ONLY mio.telegram_pollers
    ADD CONSTRAINT telegram_pollers_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE;


--
-- Name: account_access_tokens; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.account_access_tokens ENABLE ROW LEVEL SECURITY;

--
-- Name: accounts; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.accounts ENABLE ROW LEVEL SECURITY;

--
-- Name: api_tokens; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.api_tokens ENABLE ROW LEVEL SECURITY;

--
-- Name: archive_cursors; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.archive_cursors ENABLE ROW LEVEL SECURITY;

--
-- Name: archive_parts; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.archive_parts ENABLE ROW LEVEL SECURITY;

--
-- Name: attachments; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.attachments ENABLE ROW LEVEL SECURITY;

--
-- Name: bridge_cursors; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.bridge_cursors ENABLE ROW LEVEL SECURITY;

--
-- Name: bridge_settings; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.bridge_settings ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_deliveries; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_deliveries ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_leases; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_leases ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_leases_0; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_leases_0 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_leases_1; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_leases_1 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_leases_2; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_leases_2 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_positions; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_positions ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_positions_0; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_positions_0 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_positions_1; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_positions_1 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_positions_2; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_positions_2 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_settles; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_settles ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_settles_0; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_settles_0 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_settles_1; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_settles_1 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumer_settles_2; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumer_settles_2 ENABLE ROW LEVEL SECURITY;

--
-- Name: consumers; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.consumers ENABLE ROW LEVEL SECURITY;

--
-- Name: gateway_sessions; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.gateway_sessions ENABLE ROW LEVEL SECURITY;

--
-- Name: inbound_dedup; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbound_dedup ENABLE ROW LEVEL SECURITY;

--
-- Name: inbound_refs; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbound_refs ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_default; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_default ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_p20261128; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_p20261128 ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_p20261129; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_p20261129 ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_p20261130; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_p20261130 ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_p20261201; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_p20261201 ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_p20261202; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_p20261202 ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_p20261203; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_p20261203 ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_p20261204; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_p20261204 ENABLE ROW LEVEL SECURITY;

--
-- Name: inbox_p20261205; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.inbox_p20261205 ENABLE ROW LEVEL SECURITY;

--
-- Name: outbox; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.outbox ENABLE ROW LEVEL SECURITY;

--
-- Name: outbox_events; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.outbox_events ENABLE ROW LEVEL SECURITY;

--
-- Name: provider_events; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.provider_events ENABLE ROW LEVEL SECURITY;

--
-- Name: rate_buckets; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.rate_buckets ENABLE ROW LEVEL SECURITY;

--
-- Name: source_cursors; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.source_cursors ENABLE ROW LEVEL SECURITY;

--
-- Name: stream_counts; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.stream_counts ENABLE ROW LEVEL SECURITY;

--
-- Name: telegram_pollers; Type: ROW SECURITY; Schema: mio; Owner: -
--

ALTER TABLE mio.telegram_pollers ENABLE ROW LEVEL SECURITY;

--
-- Name: account_access_tokens tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.account_access_tokens USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: accounts tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.accounts USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: api_tokens tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.api_tokens USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: archive_cursors tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.archive_cursors USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: archive_parts tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.archive_parts USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: attachments tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.attachments USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: bridge_cursors tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.bridge_cursors USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: bridge_settings tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.bridge_settings USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_deliveries tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_deliveries USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_leases tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_leases USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_leases_0 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_leases_0 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_leases_1 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_leases_1 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_leases_2 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_leases_2 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_positions tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_positions USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_positions_0 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_positions_0 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_positions_1 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_positions_1 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_positions_2 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_positions_2 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_settles tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_settles USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_settles_0 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_settles_0 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_settles_1 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_settles_1 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumer_settles_2 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumer_settles_2 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: consumers tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.consumers USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: gateway_sessions tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.gateway_sessions USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbound_dedup tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbound_dedup USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbound_refs tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbound_refs USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_default tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_default USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_p20261128 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_p20261128 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_p20261129 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_p20261129 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_p20261130 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_p20261130 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_p20261201 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_p20261201 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_p20261202 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_p20261202 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_p20261203 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_p20261203 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_p20261204 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_p20261204 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: inbox_p20261205 tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.inbox_p20261205 USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: outbox tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.outbox USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: outbox_events tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.outbox_events USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: provider_events tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.provider_events USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: rate_buckets tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.rate_buckets USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: source_cursors tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.source_cursors USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: stream_counts tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.stream_counts USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: telegram_pollers tenant_isolation; Type: POLICY; Schema: mio; Owner: -
--

CREATE POLICY tenant_isolation ON mio.telegram_pollers USING ((tenant_id = mio.current_tenant_id())) WITH CHECK ((tenant_id = mio.current_tenant_id()));


--
-- Name: SCHEMA mio; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA mio TO mio_runtime;


--
-- Name: SCHEMA river; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA river TO mio_runtime;


--
-- Name: FUNCTION consumer_ack(p_tenant uuid, p_name text, p_lease_ids bigint[], p_idxs integer[], p_ids uuid[]); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.consumer_ack(p_tenant uuid, p_name text, p_lease_ids bigint[], p_idxs integer[], p_ids uuid[]) TO mio_runtime;


--
-- Name: FUNCTION consumer_ids_guard(); Type: ACL; Schema: mio; Owner: -
--

REVOKE ALL ON FUNCTION mio.consumer_ids_guard() FROM PUBLIC;
GRANT ALL ON FUNCTION mio.consumer_ids_guard() TO mio_runtime;


--
-- Name: FUNCTION consumer_pull_state(p_tenant uuid, p_name text); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.consumer_pull_state(p_tenant uuid, p_name text) TO mio_runtime;


--
-- Name: FUNCTION consumer_pull_steady(p_tenant uuid, p_name text, p_max integer); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.consumer_pull_steady(p_tenant uuid, p_name text, p_max integer) TO mio_runtime;


--
-- Name: FUNCTION consumer_rebase(p_tenant uuid, p_name text); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.consumer_rebase(p_tenant uuid, p_name text) TO mio_runtime;


--
-- Name: FUNCTION consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean) TO mio_runtime;


--
-- Name: FUNCTION consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean, p_taken bigint); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean, p_taken bigint) TO mio_runtime;


--
-- Name: PROCEDURE consumers_rebase(); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON PROCEDURE mio.consumers_rebase() TO mio_runtime;


--
-- Name: FUNCTION dispatch_job_row(p_job_id bigint); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.dispatch_job_row(p_job_id bigint) TO mio_runtime;


--
-- Name: FUNCTION inbox_partition_retire(p_before timestamp with time zone); Type: ACL; Schema: mio; Owner: -
--

REVOKE ALL ON FUNCTION mio.inbox_partition_retire(p_before timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION mio.inbox_partition_retire(p_before timestamp with time zone) TO mio_runtime;


--
-- Name: FUNCTION inbox_partition_secure(p_name text); Type: ACL; Schema: mio; Owner: -
--

REVOKE ALL ON FUNCTION mio.inbox_partition_secure(p_name text) FROM PUBLIC;


--
-- Name: FUNCTION inbox_partitions_ensure(p_from date, p_to date); Type: ACL; Schema: mio; Owner: -
--

REVOKE ALL ON FUNCTION mio.inbox_partitions_ensure(p_from date, p_to date) FROM PUBLIC;
GRANT ALL ON FUNCTION mio.inbox_partitions_ensure(p_from date, p_to date) TO mio_runtime;


--
-- Name: FUNCTION inbox_rebind(p_old regclass); Type: ACL; Schema: mio; Owner: -
--

REVOKE ALL ON FUNCTION mio.inbox_rebind(p_old regclass) FROM PUBLIC;


--
-- Name: TABLE outbox_events; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT ON TABLE mio.outbox_events TO mio_runtime;


--
-- Name: TABLE inbox; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox TO mio_runtime;


--
-- Name: FUNCTION outbox_keep_stats(); Type: ACL; Schema: mio; Owner: -
--

REVOKE ALL ON FUNCTION mio.outbox_keep_stats() FROM PUBLIC;
GRANT ALL ON FUNCTION mio.outbox_keep_stats() TO mio_runtime;


--
-- Name: FUNCTION stream_counts_fold(); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.stream_counts_fold() TO mio_runtime;


--
-- Name: FUNCTION worker_reclaim(p_client_id text, p_ttl_seconds double precision, p_max integer); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.worker_reclaim(p_client_id text, p_ttl_seconds double precision, p_max integer) TO mio_runtime;


--
-- Name: FUNCTION worker_schedule(p_client_id text, p_ttl_seconds double precision, p_max integer); Type: ACL; Schema: mio; Owner: -
--

GRANT ALL ON FUNCTION mio.worker_schedule(p_client_id text, p_ttl_seconds double precision, p_max integer) TO mio_runtime;


--
-- Name: TABLE account_access_tokens; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.account_access_tokens TO mio_runtime;


--
-- Name: TABLE account_routes; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT ON TABLE mio.account_routes TO mio_runtime;


--
-- Name: TABLE accounts; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.accounts TO mio_runtime;


--
-- Name: TABLE admin_tokens; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.admin_tokens TO mio_runtime;


--
-- Name: TABLE api_tokens; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.api_tokens TO mio_runtime;


--
-- Name: TABLE archive_cursors; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.archive_cursors TO mio_runtime;


--
-- Name: TABLE archive_parts; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.archive_parts TO mio_runtime;


--
-- Name: TABLE attachments; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.attachments TO mio_runtime;


--
-- Name: TABLE audit_log; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT ON TABLE mio.audit_log TO mio_runtime;


--
-- Name: SEQUENCE audit_log_id_seq; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE mio.audit_log_id_seq TO mio_runtime;


--
-- Name: TABLE bridge_cursors; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.bridge_cursors TO mio_runtime;


--
-- Name: TABLE bridge_settings; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.bridge_settings TO mio_runtime;


--
-- Name: TABLE consumer_deliveries; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.consumer_deliveries TO mio_runtime;


--
-- Name: TABLE consumer_id_epoch; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.consumer_id_epoch TO mio_runtime;


--
-- Name: TABLE consumer_leases; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.consumer_leases TO mio_runtime;


--
-- Name: TABLE consumer_leases_0; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_leases_0 TO mio_runtime;


--
-- Name: TABLE consumer_leases_1; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_leases_1 TO mio_runtime;


--
-- Name: TABLE consumer_leases_2; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_leases_2 TO mio_runtime;


--
-- Name: TABLE consumer_log_gen; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.consumer_log_gen TO mio_runtime;


--
-- Name: SEQUENCE consumer_position_ids; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE mio.consumer_position_ids TO mio_runtime;


--
-- Name: TABLE consumer_positions; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.consumer_positions TO mio_runtime;


--
-- Name: TABLE consumer_positions_0; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_positions_0 TO mio_runtime;


--
-- Name: TABLE consumer_positions_1; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_positions_1 TO mio_runtime;


--
-- Name: TABLE consumer_positions_2; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_positions_2 TO mio_runtime;


--
-- Name: TABLE consumer_settles; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.consumer_settles TO mio_runtime;


--
-- Name: TABLE consumer_settles_0; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_settles_0 TO mio_runtime;


--
-- Name: TABLE consumer_settles_1; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_settles_1 TO mio_runtime;


--
-- Name: TABLE consumer_settles_2; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE mio.consumer_settles_2 TO mio_runtime;


--
-- Name: TABLE consumers; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.consumers TO mio_runtime;


--
-- Name: TABLE consumer_state; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.consumer_state TO mio_runtime;


--
-- Name: SEQUENCE consumer_take_ids; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE mio.consumer_take_ids TO mio_runtime;


--
-- Name: TABLE outbox; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.outbox TO mio_runtime;


--
-- Name: TABLE dead_letters; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.dead_letters TO mio_runtime;


--
-- Name: TABLE delivery_id_key; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT ON TABLE mio.delivery_id_key TO mio_runtime;


--
-- Name: TABLE gateway_sessions; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.gateway_sessions TO mio_runtime;


--
-- Name: TABLE inbound_dedup; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbound_dedup TO mio_runtime;


--
-- Name: TABLE inbound_refs; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbound_refs TO mio_runtime;


--
-- Name: SEQUENCE inbox_seq; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE mio.inbox_seq TO mio_runtime;


--
-- Name: TABLE inbox_default; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_default TO mio_runtime;


--
-- Name: TABLE inbox_p20261128; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_p20261128 TO mio_runtime;


--
-- Name: TABLE inbox_p20261129; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_p20261129 TO mio_runtime;


--
-- Name: TABLE inbox_p20261130; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_p20261130 TO mio_runtime;


--
-- Name: TABLE inbox_p20261201; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_p20261201 TO mio_runtime;


--
-- Name: TABLE inbox_p20261202; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_p20261202 TO mio_runtime;


--
-- Name: TABLE inbox_p20261203; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_p20261203 TO mio_runtime;


--
-- Name: TABLE inbox_p20261204; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_p20261204 TO mio_runtime;


--
-- Name: TABLE inbox_p20261205; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.inbox_p20261205 TO mio_runtime;


--
-- Name: SEQUENCE inbox_ready_seq; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE mio.inbox_ready_seq TO mio_runtime;


--
-- Name: TABLE media_blobs; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.media_blobs TO mio_runtime;


--
-- Name: SEQUENCE outbox_events_id_seq; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE mio.outbox_events_id_seq TO mio_runtime;


--
-- Name: SEQUENCE outbox_seq_seq; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE mio.outbox_seq_seq TO mio_runtime;


--
-- Name: TABLE provider_events; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.provider_events TO mio_runtime;


--
-- Name: TABLE stream_counts; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.stream_counts TO mio_runtime;


--
-- Name: TABLE queue_health; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.queue_health TO mio_runtime;


--
-- Name: TABLE rate_buckets; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.rate_buckets TO mio_runtime;


--
-- Name: TABLE source_cursors; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.source_cursors TO mio_runtime;


--
-- Name: TABLE telegram_pollers; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.telegram_pollers TO mio_runtime;


--
-- Name: TABLE tenants; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.tenants TO mio_runtime;


--
-- Name: TABLE worker_heartbeats; Type: ACL; Schema: mio; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE mio.worker_heartbeats TO mio_runtime;


--
-- Name: TABLE mio_schema_migrations; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.mio_schema_migrations TO mio_runtime;


--
-- Name: TABLE river_job; Type: ACL; Schema: river; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE river.river_job TO mio_runtime;


--
-- Name: SEQUENCE river_job_id_seq; Type: ACL; Schema: river; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE river.river_job_id_seq TO mio_runtime;


--
-- Name: TABLE river_leader; Type: ACL; Schema: river; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE river.river_leader TO mio_runtime;


--
-- Name: TABLE river_migration; Type: ACL; Schema: river; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE river.river_migration TO mio_runtime;


--
-- Name: TABLE river_notification; Type: ACL; Schema: river; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE river.river_notification TO mio_runtime;


--
-- Name: SEQUENCE river_notification_id_seq; Type: ACL; Schema: river; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE river.river_notification_id_seq TO mio_runtime;


--
-- Name: TABLE river_queue; Type: ACL; Schema: river; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE river.river_queue TO mio_runtime;


--
-- Name: DEFAULT PRIVILEGES FOR SEQUENCES; Type: DEFAULT ACL; Schema: mio; Owner: -
--

ALTER DEFAULT PRIVILEGES IN SCHEMA mio GRANT SELECT,USAGE ON SEQUENCES  TO mio_runtime;


--
-- Name: DEFAULT PRIVILEGES FOR TABLES; Type: DEFAULT ACL; Schema: mio; Owner: -
--

ALTER DEFAULT PRIVILEGES IN SCHEMA mio GRANT SELECT,INSERT,DELETE,UPDATE ON TABLES  TO mio_runtime;


--
-- Name: DEFAULT PRIVILEGES FOR SEQUENCES; Type: DEFAULT ACL; Schema: river; Owner: -
--

ALTER DEFAULT PRIVILEGES IN SCHEMA river GRANT SELECT,USAGE ON SEQUENCES  TO mio_runtime;


--
-- Name: DEFAULT PRIVILEGES FOR TABLES; Type: DEFAULT ACL; Schema: river; Owner: -
--

ALTER DEFAULT PRIVILEGES IN SCHEMA river GRANT SELECT,INSERT,DELETE,UPDATE ON TABLES  TO mio_runtime;


--
-- PostgreSQL database dump complete
--


