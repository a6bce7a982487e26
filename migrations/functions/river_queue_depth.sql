-- River's queues by state: available, running and retryable jobs, and the
-- age of the oldest available one.
--
-- plpgsql: River's tables are resolved when it is called (River's
-- migrations run after MIO's).

CREATE OR REPLACE FUNCTION mio.river_queue_depth() RETURNS TABLE(queue text, available bigint, running bigint, retryable bigint, oldest_available_age interval)
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN QUERY
    SELECT j.queue::text,
           count(*) FILTER (WHERE j.state = 'available'),
           count(*) FILTER (WHERE j.state = 'running'),
           count(*) FILTER (WHERE j.state = 'retryable'),
           coalesce(now() - min(j.scheduled_at) FILTER (WHERE j.state = 'available'), interval '0')
    FROM river.river_job AS j
    WHERE j.state IN ('available', 'running', 'retryable')
    GROUP BY j.queue;
END
$$;
