-- The inbox, range-partitioned by day (docs/architecture.md, "The
-- partitioned inbox").
--
-- The partition key is the message id. Inbox ids are UUIDv7 (ingest makes
-- them when a message is accepted), so the id's first 48 bits are the
-- acceptance time in milliseconds and a range of ids is a range of time:
-- partition inbox_pYYYYMMDD holds the ids from the smallest UUID of that
-- day (00:00 UTC) to the smallest of the next. Keying on the id rather
-- than on received_at keeps the primary key (tenant_id, id) as it was (a
-- partitioned table's unique keys must contain the partition key), keeps
-- every lookup by id on one partition (pruned at plan or executor start),
-- and leaves the SQL of every reader unchanged. Ids that are not UUIDv7
-- (tests, rows from before UUIDv7) and ids outside the days created fall
-- into inbox_default, pruned row by row as before.
--
-- Days are created ahead by the inbox partitions job
-- (mio.inbox_partitions_ensure) and retired whole by retention
-- (mio.inbox_partition_retire): DETACH and DROP once every message of the
-- day is ready and read by its tenant's archive. Both run as the owner
-- (SECURITY DEFINER) with short lock timeouts: creating and dropping a
-- partition takes a brief ACCESS EXCLUSIVE lock on mio.inbox.
--
-- Existing rows are moved: the old table is renamed, the partitioned one
-- created with the days the old rows need, the rows copied, the views and
-- functions that returned or read the old row type pointed at the new
-- table, and the old table dropped.

-- +goose Up
SET lock_timeout = '10s';

-- The smallest UUID at or after time t (any version): the partition bound
-- of t. UUIDv7 layout: 48 bits of Unix milliseconds first.
CREATE FUNCTION mio.uuid_time_floor(t timestamptz) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid $$;

-- Row-level security and grants for one inbox partition: reachable by
-- name (retention prunes inbox_default directly), so it carries the
-- parent's policy.
-- +goose StatementBegin
CREATE FUNCTION mio.inbox_partition_secure(p_name text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog
AS $$
BEGIN
    EXECUTE format('ALTER TABLE mio.%I ENABLE ROW LEVEL SECURITY', p_name);
    EXECUTE format('ALTER TABLE mio.%I FORCE ROW LEVEL SECURITY', p_name);
    EXECUTE format('CREATE POLICY tenant_isolation ON mio.%I USING (tenant_id = mio.current_tenant_id())'
                   ' WITH CHECK (tenant_id = mio.current_tenant_id())', p_name);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON mio.%I TO mio_runtime', p_name);
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION mio.inbox_partition_secure(text) FROM PUBLIC;

-- Creates the missing day partitions from p_from to p_to (UTC days, both
-- included; at most 400 days) and returns how many it created. A day whose
-- range already has rows in inbox_default (a clock far ahead) fails.
-- +goose StatementBegin
CREATE FUNCTION mio.inbox_partitions_ensure(p_from date, p_to date) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog SET lock_timeout = '500ms'
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
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION mio.inbox_partitions_ensure(date, date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mio.inbox_partitions_ensure(date, date) TO mio_runtime;

-- Retires the oldest day partition that ended at or before p_before (at
-- most now()), if every message in it is ready and read by its tenant's
-- archive: the attachment rows of its messages are
-- deleted and their blob references released, then the partition is
-- detached and dropped. Returns the partition and its estimated row count
-- (pg_class.reltuples; counting would read the whole day), or no row when
-- nothing is due or the oldest due day still holds unarchived messages.
-- Fails with lock_not_available (55P03) when mio.inbox stayed busy for
-- 200 ms: the caller tries again later.
-- +goose StatementBegin
CREATE FUNCTION mio.inbox_partition_retire(p_before timestamptz)
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
REVOKE EXECUTE ON FUNCTION mio.inbox_partition_retire(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mio.inbox_partition_retire(timestamptz) TO mio_runtime;

-- The old table steps aside, its index names with it.
ALTER TABLE mio.inbox RENAME TO inbox_unpartitioned;
ALTER INDEX mio.inbox_pkey RENAME TO inbox_unpartitioned_pkey;
ALTER INDEX mio.inbox_received_stream RENAME TO inbox_unpartitioned_received_stream;
ALTER INDEX mio.inbox_ready_stream RENAME TO inbox_unpartitioned_ready_stream;
ALTER INDEX mio.inbox_received_at RENAME TO inbox_unpartitioned_received_at;

-- seq: a sequence default instead of an identity column (identity columns
-- on partitioned tables need PostgreSQL 17), continuing the old one. Its
-- NOT NULL is a CHECK so the generated Go type stays what it was with the
-- identity column (sqlc typed that as nullable).
CREATE SEQUENCE mio.inbox_seq AS bigint;
SELECT setval('mio.inbox_seq', greatest((SELECT max(seq) FROM mio.inbox_unpartitioned), 0) + 1, false);
GRANT USAGE, SELECT ON SEQUENCE mio.inbox_seq TO mio_runtime;

CREATE TABLE mio.inbox (
    tenant_id         uuid        NOT NULL,
    id                uuid        NOT NULL,
    seq               bigint      DEFAULT nextval('mio.inbox_seq') CONSTRAINT inbox_seq_present CHECK (seq IS NOT NULL),
    xid               xid8        NOT NULL DEFAULT pg_current_xact_id(),
    ready_xid         xid8,
    ready_seq         bigint,
    account_id        uuid        NOT NULL,
    channel_type      text        NOT NULL,
    conversation_id   text        NOT NULL,
    source_message_id text        NOT NULL,
    state             text        NOT NULL CHECK (state IN ('received', 'ready')),
    envelope          jsonb       NOT NULL,
    raw               bytea,
    received_at       timestamptz NOT NULL,
    ready_at          timestamptz,
    archived_at       timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts (tenant_id, id),
    CHECK ((state = 'ready') = (ready_xid IS NOT NULL))
) PARTITION BY RANGE (id);
ALTER SEQUENCE mio.inbox_seq OWNED BY mio.inbox.seq;
CREATE INDEX inbox_received_stream ON mio.inbox (tenant_id, xid, seq);
CREATE INDEX inbox_ready_stream ON mio.inbox (tenant_id, ready_xid, ready_seq) WHERE ready_xid IS NOT NULL;
CREATE INDEX inbox_received_at ON mio.inbox USING brin (received_at) WITH (autosummarize = on);
-- Messages not ready yet (attachments pending): retention checks a day
-- for them before dropping it. Small: rows leave it when they go ready.
CREATE INDEX inbox_unready ON mio.inbox (tenant_id) WHERE ready_xid IS NULL;
ALTER TABLE mio.inbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.inbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.inbox
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON mio.inbox TO mio_runtime;

CREATE TABLE mio.inbox_default PARTITION OF mio.inbox DEFAULT;
SELECT mio.inbox_partition_secure('inbox_default');

-- The days the old rows need (UUIDv7 ids only), and the coming week.
SELECT mio.inbox_partitions_ensure(d, d)
FROM (SELECT DISTINCT (to_timestamp(('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint / 1000.0)
                       AT TIME ZONE 'UTC')::date AS d
      FROM mio.inbox_unpartitioned
      WHERE substr(id::text, 15, 1) = '7') AS days;
SELECT mio.inbox_partitions_ensure(current_date, current_date + 7);

INSERT INTO mio.inbox (tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id,
                       source_message_id, state, envelope, raw, received_at, ready_at, archived_at)
SELECT tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id,
       source_message_id, state, envelope, raw, received_at, ready_at, archived_at
FROM mio.inbox_unpartitioned;

-- Views and functions bound to the old table (its row type) are
-- recreated on the new one: their text names the old table qualified
-- under the function's search path (p_old prints the same way). Used by
-- Up and Down; Down drops it.
-- +goose StatementBegin
CREATE FUNCTION mio.inbox_rebind(p_old regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog
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
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION mio.inbox_rebind(regclass) FROM PUBLIC;
SELECT mio.inbox_rebind('mio.inbox_unpartitioned');
DROP TABLE mio.inbox_unpartitioned;

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.inbox RENAME TO inbox_partitioned;
ALTER INDEX mio.inbox_pkey RENAME TO inbox_partitioned_pkey;
ALTER INDEX mio.inbox_received_stream RENAME TO inbox_partitioned_received_stream;
ALTER INDEX mio.inbox_ready_stream RENAME TO inbox_partitioned_ready_stream;
ALTER INDEX mio.inbox_received_at RENAME TO inbox_partitioned_received_at;
CREATE TABLE mio.inbox (
    tenant_id         uuid        NOT NULL,
    id                uuid        NOT NULL,
    seq               bigint      GENERATED ALWAYS AS IDENTITY,
    xid               xid8        NOT NULL DEFAULT pg_current_xact_id(),
    ready_xid         xid8,
    ready_seq         bigint,
    account_id        uuid        NOT NULL,
    channel_type      text        NOT NULL,
    conversation_id   text        NOT NULL,
    source_message_id text        NOT NULL,
    state             text        NOT NULL CHECK (state IN ('received', 'ready')),
    envelope          jsonb       NOT NULL,
    raw               bytea,
    received_at       timestamptz NOT NULL,
    ready_at          timestamptz,
    archived_at       timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts (tenant_id, id),
    CHECK ((state = 'ready') = (ready_xid IS NOT NULL))
);
INSERT INTO mio.inbox (tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id,
                       source_message_id, state, envelope, raw, received_at, ready_at, archived_at)
OVERRIDING SYSTEM VALUE
SELECT tenant_id, id, seq, xid, ready_xid, ready_seq, account_id, channel_type, conversation_id,
       source_message_id, state, envelope, raw, received_at, ready_at, archived_at
FROM mio.inbox_partitioned;
SELECT setval(pg_get_serial_sequence('mio.inbox', 'seq'), (SELECT last_value FROM mio.inbox_seq), true);
CREATE INDEX inbox_received_stream ON mio.inbox (tenant_id, xid, seq);
CREATE INDEX inbox_ready_stream ON mio.inbox (tenant_id, ready_xid, ready_seq) WHERE ready_xid IS NOT NULL;
CREATE INDEX inbox_received_at ON mio.inbox USING brin (received_at) WITH (autosummarize = on);
ALTER TABLE mio.inbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.inbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.inbox
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON mio.inbox TO mio_runtime;
SELECT mio.inbox_rebind('mio.inbox_partitioned');
DROP TABLE mio.inbox_partitioned;
DROP FUNCTION mio.inbox_partition_retire(timestamptz);
DROP FUNCTION mio.inbox_partitions_ensure(date, date);
DROP FUNCTION mio.inbox_partition_secure(text);
DROP FUNCTION mio.inbox_rebind(regclass);
DROP FUNCTION mio.uuid_time_floor(timestamptz);
