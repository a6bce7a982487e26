-- Analyzes mio.outbox and mio.outbox_events when they have grown by half
-- since their last analyze, with a coarse sample (statistics target 10):
-- the sweeper calls it every few seconds so that a fresh or fast-growing
-- outbox is never planned as a nearly empty table. The coarse statistics
-- give what this is for, the sizes of the tables and of their tenants;
-- autovacuum's own ANALYZE samples at the full target. Returns whether it
-- analyzed.
--
-- plpgsql: reads pg_stat_user_tables, then runs ANALYZE; SECURITY DEFINER,
-- because ANALYZE needs the owner (it does nothing else).

CREATE OR REPLACE FUNCTION mio.outbox_keep_stats() RETURNS boolean
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

REVOKE ALL ON FUNCTION mio.outbox_keep_stats() FROM PUBLIC;
GRANT ALL ON FUNCTION mio.outbox_keep_stats() TO mio_runtime;
