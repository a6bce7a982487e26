-- Whether River job p_job_id can still dispatch its outbox row: waiting to
-- run, or running since after p_stuck_before (a job running longer belongs
-- to a crashed process). The outbox sweeper enqueues a new job for active
-- rows without one.
--
-- plpgsql: River's tables are resolved when it is called.

CREATE OR REPLACE FUNCTION mio.dispatch_job_live(p_job_id bigint, p_stuck_before timestamp with time zone) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    IF p_job_id IS NULL THEN
        RETURN false;
    END IF;
    RETURN EXISTS (
        SELECT 1 FROM river.river_job j
        WHERE j.id = p_job_id
          AND (j.state IN ('available', 'pending', 'scheduled', 'retryable')
               OR (j.state = 'running' AND j.attempted_at > p_stuck_before))
    );
END
$$;
