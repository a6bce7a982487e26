-- +goose Up
-- mio.outbox_keep_stats (00004) takes a coarse sample: statistics target
-- 10, 3,000 rows, where ANALYZE's default takes 30,000 (issue 15).
-- The sweeper calls it every few seconds so that a fresh or fast-growing
-- outbox never runs for long on the plans of a nearly empty table; during
-- such growth it analyzes again and again, and each full ANALYZE of a
-- 50,000-row outbox took 143–271 ms, of its events 84–111 ms. In `mio
-- bench dispatch` (pg_stat_statements) its calls took 782 ms of a 5.7 s
-- throughput phase on a machine with no idle CPU. With target 10 the same
-- ANALYZEs take 16 ms each.
-- The coarse statistics are enough for what this function is for — the
-- sizes of the tables and of their tenants (a tenant with a few percent of
-- the rows is among the ten most common values), so that no plan is made
-- for a nearly empty table — and the dispatcher's statements no longer
-- depend on estimates at all (00034, 00035). Autovacuum's ANALYZE, which
-- runs on its own schedule once growth slows (10 % of the rows changed,
-- where this function waits for half), samples at the full target.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.outbox_keep_stats() RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog SET default_statistics_target = 10
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
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mio.outbox_keep_stats() RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog
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
-- +goose StatementEnd
