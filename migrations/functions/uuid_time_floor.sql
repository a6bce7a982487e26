-- The smallest UUID at or after time t (any version): the partition bound
-- of t. UUIDv7 layout: 48 bits of Unix milliseconds first.
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.uuid_time_floor(t timestamp with time zone) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid $$;
