-- Called by a live worker while River has no leader (so River's scheduler
-- does not run): moves up to p_max due scheduled and retryable jobs to
-- available. Only a worker alive for a whole timeout p_ttl_seconds acts,
-- and only when no live worker holds River's leadership.
--
-- plpgsql: River's tables are resolved when it is called.

CREATE OR REPLACE FUNCTION mio.worker_schedule(p_client_id text, p_ttl_seconds double precision, p_max integer) RETURNS TABLE(job_id bigint, kind text, queue text)
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM mio.worker_heartbeats AS h
        WHERE h.client_id = p_client_id AND h.expires_at >= now()
          AND h.alive_since <= now() - make_interval(secs => p_ttl_seconds)
    ) THEN
        RETURN;
    END IF;
    IF EXISTS (
        SELECT 1 FROM river.river_leader AS l
        JOIN mio.worker_heartbeats AS h ON h.client_id = l.leader_id
        WHERE l.expires_at > now() AND h.expires_at >= now()
    ) THEN
        RETURN; -- a live leader schedules: the common case, two small tables
    END IF;
    RETURN QUERY
    WITH due AS (
        SELECT j.id FROM river.river_job AS j
        WHERE j.state IN ('retryable', 'scheduled') AND j.priority >= 0 AND j.queue IS NOT NULL
          AND j.unique_key IS NULL AND j.scheduled_at <= now()
        ORDER BY j.priority, j.scheduled_at, j.id
        LIMIT p_max
        FOR UPDATE SKIP LOCKED
    )
    UPDATE river.river_job AS j SET state = 'available'
    FROM due
    WHERE j.id = due.id
    RETURNING j.id, j.kind, j.queue;
END
$$;

GRANT ALL ON FUNCTION mio.worker_schedule(p_client_id text, p_ttl_seconds double precision, p_max integer) TO mio_runtime;
