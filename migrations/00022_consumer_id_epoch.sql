-- +goose Up
-- Lease range ids (mio.consumer_take_ids) are never handed out twice,
-- even across a PostgreSQL crash.
--
-- A pull commits asynchronously (synchronous_commit off: the consumer's
-- row lock is not held across a WAL flush). A crash can therefore lose the
-- last pulls' commits — harmless by itself, their messages are delivered
-- again — and with them the WAL record of the sequence's advance, so the
-- sequence would hand the same range ids out again after recovery. A
-- client still holding the delivery ids of a lost pull would then settle
-- members of a NEW range with the same id: acking messages it never saw
-- (found by the chaos suite through PgBouncer: an acked delivery came
-- back). mio.consumer_ids_guard(), run by every pull before it takes
-- rows, notices that the server started since the last pull
-- (pg_postmaster_start_time) and moves the sequence a million ids ahead —
-- far more than the pulls of the seconds of WAL a crash can lose.
SET lock_timeout = '10s';
CREATE TABLE mio.consumer_id_epoch (
    one        boolean     PRIMARY KEY DEFAULT true CHECK (one),
    started_at timestamptz NOT NULL
);
INSERT INTO mio.consumer_id_epoch (started_at) VALUES (pg_postmaster_start_time());

-- +goose StatementBegin
CREATE FUNCTION mio.consumer_ids_guard() RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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
-- +goose StatementEnd
REVOKE ALL ON FUNCTION mio.consumer_ids_guard() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mio.consumer_ids_guard() TO mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION mio.consumer_ids_guard();
DROP TABLE mio.consumer_id_epoch;
