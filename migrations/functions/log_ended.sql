-- Transactions running at snapshot lo that have ended by snapshot hi: the
-- rows of those that committed are in the window (lo, hi] although their
-- xids are below pg_snapshot_xmax(lo).
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.log_ended(lo pg_snapshot, hi pg_snapshot) RETURNS xid8[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(array_agg(x), '{}') FROM pg_snapshot_xip(lo) AS x WHERE pg_visible_in_snapshot(x, hi) $$;
