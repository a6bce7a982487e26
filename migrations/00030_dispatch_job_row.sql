-- +goose Up
SET lock_timeout = '10s';

-- mio.dispatch_job_row returns the outbox row named in the arguments of
-- River dispatch job p_job_id (NULL when the job is gone). A dispatch job
-- also holds rows it took over — extras, the next messages of the lanes it
-- drained — under its id; when the job is reclaimed from a dead worker,
-- its retry resumes only this row, and the reclaimer gives the others jobs
-- of their own (queries/worker_heartbeats.sql, OutboxLeasesEnd).
-- (plpgsql: River's tables are created after MIO's migrations.)
-- +goose StatementBegin
CREATE FUNCTION mio.dispatch_job_row(p_job_id bigint) RETURNS uuid
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN (SELECT (j.args ->> 'outbox_id')::uuid FROM river.river_job AS j WHERE j.id = p_job_id);
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.dispatch_job_row(bigint) TO mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.dispatch_job_row(bigint);
