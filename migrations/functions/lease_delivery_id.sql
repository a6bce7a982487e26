-- The delivery id of member idx of lease range lease_id: an RFC 9562
-- version 8 UUID, bytes 0-5 the range id, 12 bits the member index, a
-- fixed tail. consume/leaseid.go encodes and decodes the same layout;
-- random (version 4) delivery ids come from per-message redeliveries.
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.lease_delivery_id(lease_id bigint, idx integer) RETURNS uuid
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT (lpad(to_hex(lease_id), 12, '0') || '8' || lpad(to_hex(idx), 3, '0') || '80006d696f6c7365')::uuid $$;
