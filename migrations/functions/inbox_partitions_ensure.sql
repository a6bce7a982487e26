-- Creates the missing day partitions from p_from to p_to (UTC days, both
-- included; at most 400 days) and returns how many it created. A day whose
-- range already has rows in inbox_default (a clock far ahead) fails.
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.inbox_partitions_ensure(p_from date, p_to date) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    SET lock_timeout TO '500ms'
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

REVOKE ALL ON FUNCTION mio.inbox_partitions_ensure(p_from date, p_to date) FROM PUBLIC;
GRANT ALL ON FUNCTION mio.inbox_partitions_ensure(p_from date, p_to date) TO mio_runtime;
