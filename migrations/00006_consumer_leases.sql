-- Lease ranges: a pull of an unordered consumer leases the batch it takes
-- from the stream as ONE row instead of one delivery row per message.
-- The per-message rows of mio.consumer_deliveries are only written for
-- what leaves the happy path: a nak, a term, an extend, an expired lease,
-- a dead letter (docs/architecture.md, "Lease ranges").

-- +goose Up
SET lock_timeout = '10s';

-- One row per batch taken from the stream by a pull of a consumer with
-- ordering none. Member i (0-based) is message_ids[i+1]; its delivery id
-- is mio.lease_delivery_id(id, i). A member is outstanding until its index
-- is in settled (acknowledged, or moved out into a per-message row of
-- mio.consumer_deliveries by a nak, term or extend). When the range
-- expires, its outstanding members move into mio.consumer_deliveries as
-- expired leases (same delivery ids), and the usual redelivery and
-- max_deliver rules apply to them.
CREATE TABLE mio.consumer_leases (
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

-- Like consumer_deliveries, a queue-like table: a row per pull, deleted
-- by the ack of its batch.
ALTER TABLE mio.consumer_leases SET (
    autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.0, autovacuum_vacuum_insert_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.05);

ALTER TABLE mio.consumer_leases ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_leases FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.consumer_leases
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- The delivery id of member idx of lease range lease_id: an RFC 9562
-- version 8 UUID, bytes 0-5 the range id, 12 bits the member index, a
-- fixed tail. consume/leaseid.go encodes and decodes the same layout;
-- random (version 4) delivery ids come from per-message redeliveries.
-- +goose StatementBegin
CREATE FUNCTION mio.lease_delivery_id(lease_id bigint, idx integer) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT (lpad(to_hex(lease_id), 12, '0') || '8' || lpad(to_hex(idx), 3, '0') || '80006d696f6c7365')::uuid $$;
-- +goose StatementEnd

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.lease_delivery_id(bigint, integer);
DROP TABLE IF EXISTS mio.consumer_leases;
