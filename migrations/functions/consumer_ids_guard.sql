-- Run by every pull before it takes rows: after a server (re)start
-- (pg_postmaster_start_time moved) it moves the lease range id sequence a
-- million ids ahead, so ids handed out in the WAL lost by a crash are never
-- handed out again. Returns whether it moved them.
--
-- plpgsql: a check, then an update only on the first pull after a start;
-- SECURITY DEFINER, because the runtime role does not own the sequence.

CREATE OR REPLACE FUNCTION mio.consumer_ids_guard() RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF (SELECT e.started_at FROM mio.consumer_id_epoch AS e) = pg_postmaster_start_time() THEN
        RETURN false;
    END IF;
    -- The first pull after a (re)start: one of them moves the ids ahead;
    -- the others wait for its row lock, then find the epoch current.
    UPDATE mio.consumer_id_epoch SET started_at = pg_postmaster_start_time()
    WHERE started_at IS DISTINCT FROM pg_postmaster_start_time();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM setval('mio.consumer_take_ids', nextval('mio.consumer_take_ids') + 1000000);
    RETURN true;
END
$$;

REVOKE ALL ON FUNCTION mio.consumer_ids_guard() FROM PUBLIC;
GRANT ALL ON FUNCTION mio.consumer_ids_guard() TO mio_runtime;
