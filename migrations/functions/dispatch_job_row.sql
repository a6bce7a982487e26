-- The outbox row named in the arguments of River dispatch job p_job_id (NULL
-- when the job is gone). A dispatch job also holds rows it took over (the
-- next messages of the lanes it drained) under its id; when the job is
-- reclaimed from a dead worker its retry resumes only this row, and the
-- reclaimer gives the others jobs of their own (queries/worker_heartbeats.sql,
-- OutboxLeasesEnd).
--
-- plpgsql: River's tables are resolved when it is called.

CREATE OR REPLACE FUNCTION mio.dispatch_job_row(p_job_id bigint) RETURNS uuid
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN (SELECT (j.args ->> 'outbox_id')::uuid FROM river.river_job AS j WHERE j.id = p_job_id);
END
$$;

GRANT ALL ON FUNCTION mio.dispatch_job_row(p_job_id bigint) TO mio_runtime;
