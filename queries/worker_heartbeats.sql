-- name: WorkerHeartbeat :one
-- Refreshes the heartbeat row of River client client_id to expire after
-- ttl_seconds and returns when its unbroken run of refreshes began (now
-- for a new row or one that had expired).
INSERT INTO mio.worker_heartbeats AS h (client_id, alive_since, expires_at)
VALUES (@client_id::text, now(), now() + make_interval(secs => @ttl_seconds::float8))
ON CONFLICT (client_id) DO UPDATE
SET alive_since = CASE WHEN h.expires_at < now() THEN now() ELSE h.alive_since END,
    expires_at = excluded.expires_at
RETURNING h.alive_since;

-- name: WorkerHeartbeatDelete :exec
-- Removes the row of a worker that stopped cleanly.
DELETE FROM mio.worker_heartbeats WHERE client_id = @client_id::text;

-- name: WorkerReclaim :many
-- Reclaims the running jobs of workers whose heartbeat expired (see
-- mio.worker_reclaim).
SELECT r.job_id::bigint AS job_id, r.kind::text AS kind, r.tenant_id::uuid AS tenant_id, r.dead_client::text AS dead_client
FROM mio.worker_reclaim(@client_id::text, @ttl_seconds::float8, @max_jobs::int) AS r;

-- name: OutboxLeasesEnd :many
-- Ends the leases of the tenant's sending rows held by the given dispatch
-- jobs (reclaimed from a dead worker), so their attempts resume at once
-- with the same attempt number and idempotency key, and returns them.
-- own says whether a row is its job's own (the job's retry resumes it) or
-- one the job took over — an extra or the next message of a lane it
-- drained — which needs a job of its own: the retry dispatches only the
-- row named in its arguments.
UPDATE mio.outbox AS o
SET lease_until = least(o.lease_until, now()), updated_at = now()
WHERE o.tenant_id = @tenant_id AND o.handoff_state = 'sending'
  AND o.job_id = ANY (@job_ids::bigint[])
RETURNING o.id, o.account_id, coalesce(o.id = mio.dispatch_job_row(o.job_id), false)::bool AS own;

-- name: WorkerSchedule :many
-- Makes due River jobs available while River has no live leader (see
-- mio.worker_schedule).
SELECT s.job_id::bigint AS job_id, s.kind::text AS kind, s.queue::text AS queue
FROM mio.worker_schedule(@client_id::text, @ttl_seconds::float8, @max_jobs::int) AS s;
