-- +goose Up
-- An exact backlog for every consumer, whatever its size, without counting
-- the stream row by row (docs/architecture.md, "Exact backlog"). pending
-- in mio.queue_health, the consumer and admin APIs and mio_consumer_lag is
-- one number: the consumer's stream messages it has not taken yet plus its
-- deliveries waiting to be redelivered.
--
-- mio.stream_counts: how many rows each tenant's stage stream holds, per
-- (channel type, account), as insert-only delta rows written by the
-- statement that appends the rows (statement triggers on mio.inbox), so a
-- delta row is visible to exactly the snapshots that see its rows. A
-- consumer keeps beside its position the number of matching rows its
-- position has read (taken, appended with the position) and a base (the
-- rows before its starting position, and rows retention removed before it
-- read them). Not taken = sum of the matching deltas - base - taken.
SET lock_timeout = '10s';

CREATE TABLE mio.stream_counts (
    tenant_id    uuid   NOT NULL,
    stage        text   NOT NULL CHECK (stage IN ('received', 'ready')),
    channel_type text   NOT NULL,
    account_id   uuid   NOT NULL,
    n            bigint NOT NULL
);
CREATE INDEX stream_counts_key ON mio.stream_counts (tenant_id, stage, channel_type, account_id) INCLUDE (n);
ALTER TABLE mio.stream_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.stream_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.stream_counts
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
GRANT SELECT, INSERT, DELETE ON mio.stream_counts TO mio_runtime;
-- Folded every few seconds: a few rows per key, vacuumed eagerly.
ALTER TABLE mio.stream_counts SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.0, autovacuum_vacuum_insert_threshold = 1000);

-- Rows a statement appended to the streams: every inserted row to the
-- received stage, those inserted ready to the ready stage too. A statement
-- trigger: one insert per statement, whatever wrote the rows (ingest's
-- group commit, a bulk load), in the writing statement.
-- +goose StatementBegin
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
-- +goose StatementEnd

-- Rows an UPDATE put on the ready stream (a new ready position).
-- +goose StatementBegin
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
-- +goose StatementEnd

-- The triggers first: their lock waits for writers in flight, and keeps
-- new ones out until the counts below are taken.
CREATE TRIGGER inbox_stream_counts_insert AFTER INSERT ON mio.inbox
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mio.stream_counts_inserted();
CREATE TRIGGER inbox_stream_counts_update AFTER UPDATE ON mio.inbox
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mio.stream_counts_made_ready();

INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
SELECT i.tenant_id, 'received', i.channel_type, i.account_id, count(*) FROM mio.inbox AS i
GROUP BY i.tenant_id, i.channel_type, i.account_id;
INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
SELECT i.tenant_id, 'ready', i.channel_type, i.account_id, count(*) FROM mio.inbox AS i
WHERE i.ready_xid IS NOT NULL
GROUP BY i.tenant_id, i.channel_type, i.account_id;

-- taken: the matching rows the position has read, appended with it (and
-- copied into the consumer's row with its position by the ring).
-- backlog_base: matching rows counted as read without being read (before
-- the starting position; removed by retention unread; reset by a seek or
-- a filter change).
ALTER TABLE mio.consumers ADD COLUMN taken bigint NOT NULL DEFAULT 0, ADD COLUMN backlog_base bigint NOT NULL DEFAULT 0;
ALTER TABLE mio.consumer_positions ADD COLUMN taken bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE VIEW mio.consumer_state WITH (security_invoker = true) AS
SELECT c.tenant_id, c.name, c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids,
       c.deliver_policy, c.start_time, c.ack_wait_ms, c.max_deliver, c.max_ack_pending, c.ordering, c.stage,
       coalesce(p.cursor_xid, c.cursor_xid) AS cursor_xid,
       coalesce(p.cursor_seq, c.cursor_seq) AS cursor_seq,
       coalesce(p.log_lo, c.log_lo) AS log_lo,
       CASE WHEN p.n IS NULL THEN c.log_hi ELSE p.log_hi END AS log_hi,
       coalesce(p.swept, c.swept) AS swept,
       coalesce(p.last_delivered_at, c.last_delivered_at) AS last_delivered_at,
       p.written_at AS position_written_at,
       c.created_at, c.updated_at,
       coalesce(p.taken, c.taken) AS taken,
       c.backlog_base
FROM mio.consumers AS c
LEFT JOIN LATERAL (
    SELECT q.n, q.cursor_xid, q.cursor_seq, q.log_lo, q.log_hi, q.swept, q.last_delivered_at, q.written_at, q.taken
    FROM mio.consumer_positions AS q
    WHERE q.tenant_id = c.tenant_id AND q.consumer_name = c.name
    ORDER BY q.n DESC
    LIMIT 1
) AS p ON true;

-- Rows of a tenant's stage stream matching a channel-type and account
-- filter (empty: any), as the calling statement's snapshot sees them: a
-- sum over the delta rows of the tenant's stage, a few per key.
-- +goose StatementBegin
CREATE FUNCTION mio.stream_appended(p_tenant uuid, p_stage text, p_channel_types text[], p_account_ids uuid[])
RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
SELECT coalesce(sum(s.n), 0)::bigint FROM mio.stream_counts AS s
WHERE s.tenant_id = p_tenant AND s.stage = p_stage
  AND (cardinality(coalesce(p_channel_types, '{}')) = 0 OR s.channel_type = ANY (p_channel_types))
  AND (cardinality(coalesce(p_account_ids, '{}')) = 0 OR s.account_id = ANY (p_account_ids))
$$;
-- +goose StatementEnd

-- Whether a consumer's backlog is counted row by row: a conversation
-- filter (the deltas are not kept per conversation), or a start time less
-- than five minutes before the consumer's creation (a message received
-- before it may still commit after the creation, and would be skipped by
-- the reader without being counted; received_at is ingest's accept time,
-- and an accepted message commits within seconds).
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_counts_rows(p_conversation_ids text[], p_start_time timestamptz, p_created_at timestamptz)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
SELECT cardinality(coalesce(p_conversation_ids, '{}')) > 0
       OR (p_start_time IS NOT NULL AND p_start_time > p_created_at - interval '5 minutes')
$$;
-- +goose StatementEnd

-- The rows of a consumer's stage it has not read that match its filter,
-- counted row by row as the calling statement's snapshot sees them: the
-- rest of its open window (lo, hi] after its cursor, and everything
-- committed since hi (or lo, when no window is open).
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_untaken_rows(
    p_tenant uuid, p_stage text, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint,
    p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamptz)
RETURNS bigint
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
-- +goose StatementEnd

-- The base of a consumer being created: the matching rows before its
-- starting position, as the creating statement's snapshot (its lo, for
-- deliver_policy new) sees them. all: none. new: every one. by_start_time:
-- those received before the start time. Row-by-row consumers: unused.
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_base_at_create(
    p_tenant uuid, p_stage text, p_deliver_policy text, p_channel_types text[], p_account_ids uuid[],
    p_conversation_ids text[], p_start_time timestamptz)
RETURNS bigint
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
-- +goose StatementEnd

-- The base that makes a consumer's counters agree with its position,
-- counting its unread rows row by row once (a seek, a filter change; the
-- caller holds the consumer's pull lock, taken by an earlier statement).
-- +goose StatementBegin
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
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.consumer_rebase(uuid, text) TO mio_runtime;

-- Existing consumers start exact: their unread rows counted once.
UPDATE mio.consumers AS c
SET backlog_base = CASE WHEN mio.consumer_counts_rows(s.filter_conversation_ids, s.start_time, s.created_at) THEN 0
    ELSE mio.stream_appended(s.tenant_id, s.stage, s.filter_channel_types, s.filter_account_ids) - s.taken
         - mio.consumer_untaken_rows(s.tenant_id, s.stage, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq,
                                     s.filter_channel_types, s.filter_account_ids, s.filter_conversation_ids, s.start_time)
    END
FROM mio.consumer_state AS s
WHERE c.tenant_id = s.tenant_id AND c.name = s.name;

-- Folds each tenant's delta rows into one row per key (DELETE and INSERT
-- in one statement: a reader sees the rows before or after, the same
-- sums; rows a concurrent fold deleted first are neither deleted nor
-- summed again). Only keys with more than one row are rewritten. Returns
-- the rows folded away.
-- +goose StatementBegin
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
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.stream_counts_fold() TO mio_runtime;

-- The pull's take appends taken with the position (an argument more).
DROP FUNCTION mio.consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[],
    timestamptz, int, text, interval, bigint, boolean, timestamptz, boolean);
-- mio.consumer_take_ready: ordering none, ready stage: read the next rows
-- of the consumer's window (p_lo, p_hi] after its position (mio.log_ready;
-- p_hi was taken by an earlier statement of this transaction), lease them
-- all as one range, and append the consumer's new position (stamping its
-- last delivery) when rows were read, p_delivered, or p_persist. Nothing
-- is updated or deleted (migration 00008). The position carries p_taken
-- (the consumer's taken) plus the rows read (migration 00040). Returns the rows read with the
-- range id; member i is the i-th row in window order. The caller holds
-- the consumer's row lock and passes the position it read under it.
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_take_ready(
    p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint,
    p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamptz,
    p_max int, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean,
    p_last_delivered_at timestamptz, p_persist boolean, p_taken bigint)
RETURNS TABLE (id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
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
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[],
    timestamptz, int, text, interval, bigint, boolean, timestamptz, boolean, bigint) TO mio_runtime;

-- The previous release's call (no taken argument) keeps working while the
-- pods roll: the caller holds the consumer's row lock and passes the
-- position it read under it, so the newest position's taken is the one
-- that goes with it.
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_take_ready(
    p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint,
    p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamptz,
    p_max int, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean,
    p_last_delivered_at timestamptz, p_persist boolean)
RETURNS TABLE (id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
LANGUAGE sql
AS $$
SELECT * FROM mio.consumer_take_ready(p_tenant, p_lo, p_hi, p_cursor_xid, p_cursor_seq, p_channel_types, p_account_ids,
    p_conversation_ids, p_start_time, p_max, p_name, p_ack_wait, p_swept, p_delivered, p_last_delivered_at, p_persist,
    (SELECT s.taken FROM mio.consumer_state AS s WHERE s.tenant_id = p_tenant AND s.name = p_name))
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[],
    timestamptz, int, text, interval, bigint, boolean, timestamptz, boolean) TO mio_runtime;

-- Rebases every consumer, one transaction each (its row lock, then its
-- unread rows counted once): after a roll during which processes of the
-- previous release moved positions without taken counts (received-stage
-- and ordered consumers, seeks, creations, ring steps), CALL
-- mio.consumers_rebase() makes every pending exact again.
-- +goose StatementBegin
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
-- +goose StatementEnd
GRANT EXECUTE ON PROCEDURE mio.consumers_rebase() TO mio_runtime;

-- mio.consumer_pull_steady: the steady-state pull of consumer p_name of
-- tenant p_tenant, a whole pull transaction in one statement (the caller
-- sends it alone, in an implicit transaction). It sets the transaction's
-- tenant and settings (asynchronous commit, generic plans, no bitmap
-- scans: as BeginPull), runs the range-id guard, and takes the consumer's
-- row lock; the statements after the lock take new snapshots (plpgsql, a
-- volatile function, READ COMMITTED), so they see what the previous lock
-- holder committed. For an unordered consumer of the ready stage with
-- nothing due again and no lease range expired it takes up to p_max rows
-- (fewer when max_ack_pending leaves less room) with
-- mio.consumer_take_ready and returns them with status 'taken' (nothing
-- at all when there was nothing to take). Otherwise it writes nothing and
-- returns one row with status 'not_found' (no such consumer), 'ordered'
-- (an ordered consumer or the received stage: the client's full path,
-- every time) or 'due' (redeliveries or expired ranges first: the full
-- path, this time). The position is appended when rows were read, its
-- sweep moved, or the stored one is over a second old
-- (db.Consumer.positionDue).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.consumer_pull_steady(p_tenant uuid, p_name text, p_max int)
RETURNS TABLE (status text, id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
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
-- +goose StatementEnd


-- Retiring a day partition counts its rows a consumer had not read yet.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.inbox_partition_retire(p_before timestamptz)
RETURNS TABLE (partition_name text, messages bigint, blobs_released bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog SET lock_timeout = '200ms'
AS $$
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
$$;
-- +goose StatementEnd

-- mio.queue_health: pending is exact, for any backlog (no cap): the
-- deliveries waiting plus the stream messages not taken yet — from the
-- counters (the matching deltas less base and taken: a sum over a few
-- rows per key), or row by row for the consumers mio.consumer_counts_rows
-- names. oldest_pending_age: the oldest waiting delivery, or the first
-- message not taken yet (the next row of its window, or after it).
-- Inline, not in functions: inlined, mio.log_ready's LIMIT 1 is a
-- constant the planner sees (one index probe per consumer).
CREATE OR REPLACE VIEW mio.queue_health WITH (security_invoker = true) AS
SELECT 'consumer'::text AS kind, c.tenant_id, c.name AS consumer, NULL::text AS queue,
       d.pending + u.untaken AS pending, d.ack_pending + l.leased AS ack_pending, d.redelivered, d.dead,
       coalesce(now() - least(d.oldest_pending, o.next_untaken_at), interval '0') AS oldest_pending_age,
       c.last_delivered_at,
       NULL::bigint AS available, NULL::bigint AS running, NULL::bigint AS retryable,
       NULL::interval AS oldest_available_age
FROM mio.consumer_state AS c
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE x.state = 'pending') AS pending,
           count(*) FILTER (WHERE x.state = 'leased') AS ack_pending,
           count(*) FILTER (WHERE x.state <> 'dead' AND x.delivery_count > 1) AS redelivered,
           count(*) FILTER (WHERE x.state = 'dead') AS dead,
           min(x.created_at) FILTER (WHERE x.state = 'pending') AS oldest_pending
    FROM mio.consumer_deliveries AS x
    WHERE x.tenant_id = c.tenant_id AND x.consumer_name = c.name
) AS d
CROSS JOIN LATERAL (
    -- Outstanding lease-range members (migration 00008): ranges above the
    -- consumer's sweep, less the members their settle rows name.
    SELECT coalesce(sum(cardinality(r.message_ids) - coalesce((
               SELECT sum(cardinality(s.idxs)) FROM mio.consumer_settles AS s
               WHERE s.tenant_id = r.tenant_id AND s.consumer_name = r.consumer_name AND s.lease_id = r.id), 0)), 0)::bigint AS leased
    FROM mio.consumer_leases AS r
    WHERE r.tenant_id = c.tenant_id AND r.consumer_name = c.name AND r.id > c.swept
) AS l
CROSS JOIN LATERAL (
    SELECT CASE WHEN mio.consumer_counts_rows(c.filter_conversation_ids, c.start_time, c.created_at)
                THEN mio.consumer_untaken_rows(c.tenant_id, c.stage, c.log_lo, c.log_hi, c.cursor_xid, c.cursor_seq,
                                               c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time)
                ELSE (SELECT coalesce(sum(k.n), 0) FROM mio.stream_counts AS k
                      WHERE k.tenant_id = c.tenant_id AND k.stage = c.stage
                        AND (cardinality(coalesce(c.filter_channel_types, '{}')) = 0 OR k.channel_type = ANY (c.filter_channel_types))
                        AND (cardinality(coalesce(c.filter_account_ids, '{}')) = 0 OR k.account_id = ANY (c.filter_account_ids)))
                     - c.backlog_base - c.taken
           END::bigint AS untaken
) AS u
CROSS JOIN LATERAL (
    SELECT min(f.received_at) AS next_untaken_at
    FROM (
        (SELECT i.received_at
         FROM mio.log_ready(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                            coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'),
                            coalesce(c.filter_conversation_ids, '{}'), c.start_time, 1) AS i
         WHERE u.untaken > 0 AND c.stage = 'ready')
        UNION ALL
        (SELECT i.received_at
         FROM mio.log_ready(c.tenant_id, c.log_hi, pg_current_snapshot(), '0', 0,
                            coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'),
                            coalesce(c.filter_conversation_ids, '{}'), c.start_time, 1) AS i
         WHERE u.untaken > 0 AND c.stage = 'ready' AND c.log_hi IS NOT NULL)
        UNION ALL
        (SELECT i.received_at
         FROM mio.log_received(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                               coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'),
                               coalesce(c.filter_conversation_ids, '{}'), c.start_time, 1) AS i
         WHERE u.untaken > 0 AND c.stage = 'received')
        UNION ALL
        (SELECT i.received_at
         FROM mio.log_received(c.tenant_id, c.log_hi, pg_current_snapshot(), '0', 0,
                               coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'),
                               coalesce(c.filter_conversation_ids, '{}'), c.start_time, 1) AS i
         WHERE u.untaken > 0 AND c.stage = 'received' AND c.log_hi IS NOT NULL)
    ) AS f
) AS o
UNION ALL
SELECT 'river_queue'::text AS kind, NULL::uuid AS tenant_id, NULL::text AS consumer, q.queue,
       NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::interval, NULL::timestamptz,
       q.available, q.running, q.retryable, q.oldest_available_age
FROM mio.river_queue_depth() AS q;

-- +goose Down
SET lock_timeout = '10s';
DROP VIEW mio.queue_health;
DROP VIEW mio.consumer_state;
CREATE VIEW mio.consumer_state WITH (security_invoker = true) AS
SELECT c.tenant_id, c.name, c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids,
       c.deliver_policy, c.start_time, c.ack_wait_ms, c.max_deliver, c.max_ack_pending, c.ordering, c.stage,
       coalesce(p.cursor_xid, c.cursor_xid) AS cursor_xid,
       coalesce(p.cursor_seq, c.cursor_seq) AS cursor_seq,
       coalesce(p.log_lo, c.log_lo) AS log_lo,
       CASE WHEN p.n IS NULL THEN c.log_hi ELSE p.log_hi END AS log_hi,
       coalesce(p.swept, c.swept) AS swept,
       coalesce(p.last_delivered_at, c.last_delivered_at) AS last_delivered_at,
       p.written_at AS position_written_at,
       c.created_at, c.updated_at
FROM mio.consumers AS c
LEFT JOIN LATERAL (
    SELECT q.n, q.cursor_xid, q.cursor_seq, q.log_lo, q.log_hi, q.swept, q.last_delivered_at, q.written_at
    FROM mio.consumer_positions AS q
    WHERE q.tenant_id = c.tenant_id AND q.consumer_name = c.name
    ORDER BY q.n DESC
    LIMIT 1
) AS p ON true;
GRANT SELECT ON mio.consumer_state TO mio_runtime;
CREATE OR REPLACE VIEW mio.queue_health WITH (security_invoker = true) AS
SELECT 'consumer'::text AS kind, c.tenant_id, c.name AS consumer, NULL::text AS queue,
       d.pending + u.untaken AS pending, d.ack_pending + l.leased AS ack_pending, d.redelivered, d.dead,
       coalesce(now() - least(d.oldest_pending, u.oldest_untaken), interval '0') AS oldest_pending_age,
       c.last_delivered_at,
       NULL::bigint AS available, NULL::bigint AS running, NULL::bigint AS retryable,
       NULL::interval AS oldest_available_age
FROM mio.consumer_state AS c
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE x.state = 'pending') AS pending,
           count(*) FILTER (WHERE x.state = 'leased') AS ack_pending,
           count(*) FILTER (WHERE x.state <> 'dead' AND x.delivery_count > 1) AS redelivered,
           count(*) FILTER (WHERE x.state = 'dead') AS dead,
           min(x.created_at) FILTER (WHERE x.state = 'pending') AS oldest_pending
    FROM mio.consumer_deliveries AS x
    WHERE x.tenant_id = c.tenant_id AND x.consumer_name = c.name
) AS d
CROSS JOIN LATERAL (
    -- Outstanding lease-range members (migration 00008): ranges above the
    -- consumer's sweep, less the members their settle rows name.
    SELECT coalesce(sum(cardinality(r.message_ids) - coalesce((
               SELECT sum(cardinality(s.idxs)) FROM mio.consumer_settles AS s
               WHERE s.tenant_id = r.tenant_id AND s.consumer_name = r.consumer_name AND s.lease_id = r.id), 0)), 0)::bigint AS leased
    FROM mio.consumer_leases AS r
    WHERE r.tenant_id = c.tenant_id AND r.consumer_name = c.name AND r.id > c.swept
) AS l
CROSS JOIN LATERAL (
    SELECT count(*) AS untaken, min(s.received_at) AS oldest_untaken
    FROM (
        SELECT i.received_at
        FROM mio.log_ready(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                           c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, 100) AS i
        WHERE c.stage = 'ready'
        UNION ALL
        SELECT i.received_at
        FROM mio.log_received(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                              c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, 100) AS i
        WHERE c.stage = 'received'
    ) AS s
) AS u
UNION ALL
SELECT 'river_queue'::text AS kind, NULL::uuid AS tenant_id, NULL::text AS consumer, q.queue,
       NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::interval, NULL::timestamptz,
       q.available, q.running, q.retryable, q.oldest_available_age
FROM mio.river_queue_depth() AS q;


-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.inbox_partition_retire(p_before timestamptz)
RETURNS TABLE (partition_name text, messages bigint, blobs_released bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog SET lock_timeout = '200ms'
AS $$
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
$$;
-- +goose StatementEnd
DROP PROCEDURE mio.consumers_rebase();
DROP FUNCTION mio.consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[],
    timestamptz, int, text, interval, bigint, boolean, timestamptz, boolean);
DROP FUNCTION mio.consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[],
    timestamptz, int, text, interval, bigint, boolean, timestamptz, boolean, bigint);
-- mio.consumer_take_ready: ordering none, ready stage: read the next rows
-- of the consumer's window (p_lo, p_hi] after its position (mio.log_ready;
-- p_hi was taken by an earlier statement of this transaction), lease them
-- all as one range, and append the consumer's new position (stamping its
-- last delivery) when rows were read, p_delivered, or p_persist. Nothing
-- is updated or deleted (migration 00008). Returns the rows read with the
-- range id; member i is the i-th row in window order. The caller holds
-- the consumer's row lock and passes the position it read under it.
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_take_ready(
    p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint,
    p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamptz,
    p_max int, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean,
    p_last_delivered_at timestamptz, p_persist boolean)
RETURNS TABLE (id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
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
        INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at)
        SELECT p_tenant, p_name, (SELECT g.gen FROM g), nc.lo, nc.hi, nc.xid, nc.seq,
               p_swept, CASE WHEN nc.n > 0 OR p_delivered THEN now() ELSE p_last_delivered_at END
        FROM nc
        WHERE nc.n > 0 OR p_delivered OR p_persist
    )
    SELECT s.id, s.xid, s.seq, s.message_seq, s.envelope, s.raw, l.id
    FROM s CROSS JOIN l
    ORDER BY s.xid, s.seq;
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[],
    timestamptz, int, text, interval, bigint, boolean, timestamptz, boolean) TO mio_runtime;

-- mio.consumer_pull_steady: the steady-state pull of consumer p_name of
-- tenant p_tenant, a whole pull transaction in one statement (the caller
-- sends it alone, in an implicit transaction). It sets the transaction's
-- tenant and settings (asynchronous commit, generic plans, no bitmap
-- scans: as BeginPull), runs the range-id guard, and takes the consumer's
-- row lock; the statements after the lock take new snapshots (plpgsql, a
-- volatile function, READ COMMITTED), so they see what the previous lock
-- holder committed. For an unordered consumer of the ready stage with
-- nothing due again and no lease range expired it takes up to p_max rows
-- (fewer when max_ack_pending leaves less room) with
-- mio.consumer_take_ready and returns them with status 'taken' (nothing
-- at all when there was nothing to take). Otherwise it writes nothing and
-- returns one row with status 'not_found' (no such consumer), 'ordered'
-- (an ordered consumer or the received stage: the client's full path,
-- every time) or 'due' (redeliveries or expired ranges first: the full
-- path, this time). The position is appended when rows were read, its
-- sweep moved, or the stored one is over a second old
-- (db.Consumer.positionDue).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.consumer_pull_steady(p_tenant uuid, p_name text, p_max int)
RETURNS TABLE (status text, id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
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
           s.last_delivered_at, coalesce(s.position_written_at, 'epoch') AS position_written_at
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
        c.last_delivered_at, c.swept <> st.swept OR now() - c.position_written_at > interval '1 second') AS t;
END
$$;
-- +goose StatementEnd

DROP FUNCTION mio.stream_counts_fold();
DROP FUNCTION mio.consumer_rebase(uuid, text);
DROP FUNCTION mio.consumer_base_at_create(uuid, text, text, text[], uuid[], text[], timestamptz);
DROP FUNCTION mio.consumer_untaken_rows(uuid, text, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[], timestamptz);
DROP FUNCTION mio.consumer_counts_rows(text[], timestamptz, timestamptz);
DROP FUNCTION mio.stream_appended(uuid, text, text[], uuid[]);
ALTER TABLE mio.consumer_positions DROP COLUMN taken;
ALTER TABLE mio.consumers DROP COLUMN taken, DROP COLUMN backlog_base;
DROP TRIGGER inbox_stream_counts_update ON mio.inbox;
DROP TRIGGER inbox_stream_counts_insert ON mio.inbox;
DROP FUNCTION mio.stream_counts_made_ready();
DROP FUNCTION mio.stream_counts_inserted();
DROP TABLE mio.stream_counts;
