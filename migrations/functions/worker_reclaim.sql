-- mio.worker_reclaim: called by live worker p_client_id, reclaims the
-- running River jobs (up to p_max) of the processes whose heartbeat row
-- expired, the way River's own rescuer does for jobs running too long:
-- available again at once with an error appended (discarded once their
-- attempts are used up, cancelled when a cancel was asked for). Only a
-- worker alive for a whole timeout p_ttl_seconds judges: after an outage
-- of the database every worker has a timeout to refresh its row again
-- before any is declared dead. A process without a row (an older
-- version, a client built elsewhere) is never judged: its jobs are left
-- to River's rescuer. The expired rows are locked (SKIP LOCKED: a row
-- being refreshed is alive), so a refresh waits for the reclaim. Returns
-- the reclaimed jobs with the tenant of dispatch jobs (the nil uuid for
-- other kinds), whose sending rows' leases the caller ends (a dead
-- process sends nothing). Rows expired over an hour ago are deleted.
--
-- plpgsql: River's tables are resolved when it is called.

CREATE OR REPLACE FUNCTION mio.worker_reclaim(p_client_id text, p_ttl_seconds double precision, p_max integer) RETURNS TABLE(job_id bigint, kind text, tenant_id uuid, dead_client text)
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
    DELETE FROM mio.worker_heartbeats AS h WHERE h.expires_at < now() - interval '1 hour';
    IF NOT EXISTS (SELECT 1 FROM mio.worker_heartbeats AS h WHERE h.expires_at < now()) THEN
        RETURN; -- nobody dead, the common case: one look at this small table
    END IF;
    RETURN QUERY
    WITH dead AS (
        SELECT h.client_id FROM mio.worker_heartbeats AS h
        WHERE h.expires_at < now()
        FOR UPDATE SKIP LOCKED
    ), stuck AS (
        SELECT j.id, d.client_id,
               CASE WHEN j.metadata ? 'cancel_attempted_at' THEN 'cancelled'
                    WHEN j.attempt >= j.max_attempts THEN 'discarded'
                    ELSE 'available' END AS next_state
        FROM river.river_job AS j
        JOIN dead AS d ON d.client_id = j.attempted_by[cardinality(j.attempted_by)]
        WHERE j.state = 'running'
        ORDER BY j.id
        LIMIT p_max
        FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE river.river_job AS j
    SET state = s.next_state::river.river_job_state,
        finalized_at = CASE WHEN s.next_state = 'available' THEN NULL ELSE now() END,
        scheduled_at = CASE WHEN s.next_state = 'available' THEN now() ELSE j.scheduled_at END,
        errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', greatest(j.attempt, 0),
            'error', format('worker %s stopped refreshing its heartbeat: job reclaimed', s.client_id), 'trace', '')),
        metadata = j.metadata || jsonb_build_object('river:rescue_count',
            coalesce(CASE WHEN jsonb_typeof(j.metadata -> 'river:rescue_count') = 'number'
                          THEN (j.metadata ->> 'river:rescue_count')::int END, 0) + 1)
    FROM stuck AS s
    WHERE j.id = s.id
    RETURNING j.id, j.kind,
              coalesce(CASE WHEN j.kind = 'mio.dispatch' THEN (j.args ->> 'tenant_id')::uuid END, '00000000-0000-0000-0000-000000000000'),
              s.client_id;
END
$$;

GRANT ALL ON FUNCTION mio.worker_reclaim(p_client_id text, p_ttl_seconds double precision, p_max integer) TO mio_runtime;
