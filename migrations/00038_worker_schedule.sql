-- +goose Up
-- mio.worker_schedule: called by live worker p_client_id, makes up to
-- p_max due River jobs (scheduled or retryable, scheduled_at passed)
-- available when River has no live leader — the way River's scheduler
-- does it, which runs only on the leader. A leader killed with SIGKILL
-- keeps its leadership row until it expires (~15 s), and after a
-- crash-restart of PostgreSQL the (unlogged) leader table is empty until
-- the next election: meanwhile a retry's backoff or a snoozed job (a
-- worker snoozes the jobs it is handed while its own heartbeat is lost)
-- would wait for whoever is elected next — in TestChaos once 30 s past the
-- lease of the send it held. "No live leader": no unexpired row in
-- river.river_leader whose leader has an unexpired heartbeat row. Like
-- mio.worker_reclaim, only a worker alive for a whole timeout p_ttl_seconds
-- acts. Jobs with a unique key are left to the leader (River's scheduler
-- settles their conflicts; MIO inserts none that wait). SKIP LOCKED: a job
-- the leader's scheduler or another worker is moving is theirs. Returns
-- the jobs made available. (plpgsql: River's tables are created after
-- these migrations.)
SET lock_timeout = '10s';
-- +goose StatementBegin
CREATE FUNCTION mio.worker_schedule(p_client_id text, p_ttl_seconds float8, p_max int)
    RETURNS TABLE (job_id bigint, kind text, queue text)
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
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.worker_schedule(text, float8, int) TO mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.worker_schedule(text, float8, int);
