-- Append-only consumer bookkeeping. A pull and an ack no longer update or
-- delete a row: a pull appends its lease range and, when its position
-- moved, a position row; an ack appends a settle row naming the members it
-- settled. Nothing on that path leaves a dead tuple, so a transaction or
-- snapshot held open anywhere in the cluster (which stops vacuum from
-- reclaiming anything) no longer makes every pull walk more and more dead
-- versions. The three append-only tables are partitioned into a ring of
-- three generations; a maintenance job retires the oldest generation by
-- TRUNCATE (moving what is still outstanding in it out first), the way PgQ
-- rotates its event tables (docs/architecture.md, "Append-only consumer
-- bookkeeping").

-- +goose Up
SET lock_timeout = '10s';

-- The generation new rows go to. next_clean: the generation after it is
-- empty (truncated), so the ring may advance.
CREATE TABLE mio.consumer_log_gen (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    gen        smallint    NOT NULL DEFAULT 0 CHECK (gen BETWEEN 0 AND 2),
    next_clean boolean     NOT NULL DEFAULT true,
    rotated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO mio.consumer_log_gen DEFAULT VALUES;

-- Lease-range ids (and take positions of ordered consumers: batch * 4096
-- + index) continue the old table's identity sequence.
CREATE SEQUENCE mio.consumer_take_ids AS bigint MAXVALUE 281474976710655;
SELECT setval('mio.consumer_take_ids', greatest((SELECT last_value FROM mio.consumer_leases_id_seq), 1) + 1, false);
CREATE SEQUENCE mio.consumer_position_ids AS bigint;

-- Outstanding members of the old lease ranges become per-message leases
-- (same delivery ids, same expiry), then the old table goes.
INSERT INTO mio.consumer_deliveries (
    tenant_id, consumer_name, message_id, pos, message_seq, conversation_key, state,
    delivery_id, delivery_count, lease_expires_at
)
SELECT l.tenant_id, l.consumer_name, i.id, l.id * 4096 + g.idx, i.seq, i.account_id::text || ':' || i.conversation_id,
       'leased', mio.lease_delivery_id(l.id, g.idx), 1, l.expires_at
FROM mio.consumer_leases AS l
CROSS JOIN LATERAL generate_series(0, cardinality(l.message_ids) - 1) AS g (idx)
JOIN mio.inbox AS i ON i.tenant_id = l.tenant_id AND i.id = l.message_ids[g.idx + 1]
WHERE NOT (g.idx = ANY (l.settled))
ON CONFLICT DO NOTHING;
DROP TABLE mio.consumer_leases;

-- One row per batch a pull of an unordered consumer takes from the log.
-- Member i (0-based) is message_ids[i+1], delivery id
-- mio.lease_delivery_id(id, i). A member is outstanding until a row of
-- mio.consumer_settles names it (acknowledged, or moved out into a
-- per-message row of mio.consumer_deliveries by a nak, term, extend or
-- expiry). Never updated or deleted: retired with its generation.
CREATE TABLE mio.consumer_leases (
    tenant_id     uuid        NOT NULL,
    consumer_name text        NOT NULL,
    gen           smallint    NOT NULL,
    id            bigint      NOT NULL CHECK (id < 281474976710656),
    message_ids   uuid[]      NOT NULL CHECK (cardinality(message_ids) BETWEEN 1 AND 4096),
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, consumer_name, id, gen),
    FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers (tenant_id, name) ON DELETE CASCADE
) PARTITION BY LIST (gen);

-- Settlements of lease-range members, appended by acks and by moves out.
-- No foreign key: an ack does not lock the consumer (a key-share lock on
-- its row would conflict with the pull's row lock); range ids are never
-- reused, so rows of a deleted consumer match nothing.
CREATE TABLE mio.consumer_settles (
    tenant_id     uuid      NOT NULL,
    consumer_name text      NOT NULL,
    gen           smallint  NOT NULL,
    lease_id      bigint    NOT NULL,
    idxs          integer[] NOT NULL CHECK (cardinality(idxs) BETWEEN 1 AND 4096)
) PARTITION BY LIST (gen);
CREATE INDEX consumer_settles_lease ON mio.consumer_settles (tenant_id, consumer_name, lease_id);

-- A consumer's position, appended by a pull when it moved; the newest row
-- (highest n) is the position, else the columns of mio.consumers (where
-- the rotation copies the newest row before retiring its generation).
-- swept: every lease range of the consumer with id <= swept is settled.
CREATE TABLE mio.consumer_positions (
    tenant_id         uuid        NOT NULL,
    consumer_name     text        NOT NULL,
    gen               smallint    NOT NULL,
    n                 bigint      NOT NULL DEFAULT nextval('mio.consumer_position_ids'),
    log_lo            pg_snapshot NOT NULL,
    log_hi            pg_snapshot,
    cursor_xid        xid8        NOT NULL,
    cursor_seq        bigint      NOT NULL,
    swept             bigint      NOT NULL,
    last_delivered_at timestamptz,
    written_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, consumer_name, n, gen),
    FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers (tenant_id, name) ON DELETE CASCADE
) PARTITION BY LIST (gen);

ALTER TABLE mio.consumers ADD COLUMN swept bigint NOT NULL DEFAULT 0;

-- +goose StatementBegin
DO $$
DECLARE
    t text;
    g int;
BEGIN
    FOREACH t IN ARRAY ARRAY['consumer_leases', 'consumer_settles', 'consumer_positions'] LOOP
        EXECUTE format('ALTER TABLE mio.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE mio.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON mio.%I USING (tenant_id = mio.current_tenant_id())'
                       ' WITH CHECK (tenant_id = mio.current_tenant_id())', t);
        FOR g IN 0..2 LOOP
            EXECUTE format('CREATE TABLE mio.%I PARTITION OF mio.%I FOR VALUES IN (%s)', t || '_' || g, t, g);
            -- The partitions are reachable by name too: same policy. The
            -- rotation retires a generation by TRUNCATE of its partitions.
            EXECUTE format('ALTER TABLE mio.%I ENABLE ROW LEVEL SECURITY', t || '_' || g);
            EXECUTE format('ALTER TABLE mio.%I FORCE ROW LEVEL SECURITY', t || '_' || g);
            EXECUTE format('CREATE POLICY tenant_isolation ON mio.%I USING (tenant_id = mio.current_tenant_id())'
                           ' WITH CHECK (tenant_id = mio.current_tenant_id())', t || '_' || g);
            EXECUTE format('GRANT SELECT, INSERT, TRUNCATE ON mio.%I TO mio_runtime', t || '_' || g);
            -- Insert-only: vacuum only to keep the visibility map current.
            EXECUTE format('ALTER TABLE mio.%I SET (autovacuum_vacuum_insert_scale_factor = 0.2)', t || '_' || g);
        END LOOP;
    END LOOP;
END
$$;
-- +goose StatementEnd
GRANT SELECT, INSERT ON mio.consumer_leases, mio.consumer_settles, mio.consumer_positions TO mio_runtime;
GRANT SELECT, UPDATE ON mio.consumer_log_gen TO mio_runtime;
GRANT USAGE, SELECT ON SEQUENCE mio.consumer_take_ids, mio.consumer_position_ids TO mio_runtime;

-- A consumer with its current position: the newest position row, else the
-- consumer's own columns.
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

-- +goose Down
SET lock_timeout = '10s';
DROP VIEW mio.consumer_state;
-- Back to one mutable row per range: outstanding members keep their ids.
CREATE TABLE mio.consumer_leases_old (
    tenant_id     uuid        NOT NULL,
    consumer_name text        NOT NULL,
    id            bigint      GENERATED ALWAYS AS IDENTITY CHECK (id < 281474976710656),
    message_ids   uuid[]      NOT NULL CHECK (cardinality(message_ids) BETWEEN 1 AND 4096),
    settled       integer[]   NOT NULL DEFAULT '{}',
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, consumer_name, id),
    FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers (tenant_id, name) ON DELETE CASCADE
);
INSERT INTO mio.consumer_leases_old (tenant_id, consumer_name, id, message_ids, settled, expires_at, created_at)
OVERRIDING SYSTEM VALUE
SELECT l.tenant_id, l.consumer_name, l.id, l.message_ids,
       coalesce((SELECT array_agg(DISTINCT x) FROM mio.consumer_settles AS s CROSS JOIN LATERAL unnest(s.idxs) AS x
                 WHERE s.tenant_id = l.tenant_id AND s.consumer_name = l.consumer_name AND s.lease_id = l.id), '{}'),
       l.expires_at, l.created_at
FROM mio.consumer_leases AS l;
DELETE FROM mio.consumer_leases_old WHERE cardinality(settled) >= cardinality(message_ids);
UPDATE mio.consumers AS c SET
    log_lo = s.log_lo, log_hi = s.log_hi, cursor_xid = s.cursor_xid, cursor_seq = s.cursor_seq,
    last_delivered_at = s.last_delivered_at
FROM (SELECT DISTINCT ON (tenant_id, consumer_name) * FROM mio.consumer_positions ORDER BY tenant_id, consumer_name, n DESC) AS s
WHERE c.tenant_id = s.tenant_id AND c.name = s.consumer_name;
DROP TABLE mio.consumer_positions;
DROP TABLE mio.consumer_settles;
DROP TABLE mio.consumer_leases;
ALTER TABLE mio.consumer_leases_old RENAME TO consumer_leases;
ALTER SEQUENCE mio.consumer_leases_old_id_seq RENAME TO consumer_leases_id_seq;
SELECT setval(pg_get_serial_sequence('mio.consumer_leases', 'id'), (SELECT last_value FROM mio.consumer_take_ids), true);
ALTER TABLE mio.consumer_leases SET (
    autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.0, autovacuum_vacuum_insert_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.05);
ALTER TABLE mio.consumer_leases ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_leases FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.consumer_leases
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
GRANT USAGE, SELECT ON SEQUENCE mio.consumer_leases_id_seq TO mio_runtime;
ALTER TABLE mio.consumers DROP COLUMN swept;
DROP SEQUENCE mio.consumer_position_ids;
DROP SEQUENCE mio.consumer_take_ids;
DROP TABLE mio.consumer_log_gen;
