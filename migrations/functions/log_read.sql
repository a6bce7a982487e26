-- Whether a row at (xid, seq) has been read by a reader at (lo, hi, after).
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.log_read(xid xid8, seq bigint, lo pg_snapshot, hi pg_snapshot, after_xid xid8, after_seq bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT pg_visible_in_snapshot(xid, lo)
          OR (hi IS NOT NULL AND pg_visible_in_snapshot(xid, hi) AND (xid, seq) <= (after_xid, after_seq)) $$;
