-- Agents first (issue 13): the install's delivery-id key. Lease-range
-- delivery ids carry a tag computed with this key (consume/deliveryid.go),
-- so they cannot be guessed from one another and a settle checks the tag
-- before it touches a lease. One random key per database, shared by every
-- replica and kept across restarts; never returned by any API.

-- +goose Up
SET lock_timeout = '10s';

CREATE TABLE mio.delivery_id_key (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    key        bytea       NOT NULL CHECK (length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- 32 bytes from two version 4 UUIDs (pg_strong_random): 244 random bits.
INSERT INTO mio.delivery_id_key (key)
VALUES (decode(substr(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 1, 64), 'hex'));

-- The service only reads it.
REVOKE ALL ON mio.delivery_id_key FROM mio_runtime;
GRANT SELECT ON mio.delivery_id_key TO mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP TABLE IF EXISTS mio.delivery_id_key;
