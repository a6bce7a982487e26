-- Operations plane: admin tokens with an expiry, tenants that can be
-- disabled, webhook secrets rotated with a grace period, and the audit
-- log of every operator mutation.
--
-- mio.audit_log is not tenant-scoped, like mio.admin_tokens: it records
-- the operators' actions (across tenants and on the operator plane
-- itself) and is read through the admin API, never by tenants. It holds
-- no secrets: before/after are the metadata an operator sees.

-- +goose Up
SET lock_timeout = '10s';

ALTER TABLE mio.admin_tokens ADD COLUMN expires_at timestamptz;

ALTER TABLE mio.tenants
    ADD COLUMN status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled'));

-- The previous webhook secret keeps verifying until
-- webhook_secret_prev_until, after a rotation (sealed like the current one).
ALTER TABLE mio.accounts
    ADD COLUMN webhook_secret_prev_enc   bytea,
    ADD COLUMN webhook_secret_prev_until timestamptz;

CREATE TABLE mio.audit_log (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    -- "admin:<admin token id>" or "cli:<os user>".
    actor     text        NOT NULL CHECK (actor <> ''),
    action    text        NOT NULL CHECK (action <> ''),
    tenant_id uuid,
    target    text        NOT NULL DEFAULT '',
    before    jsonb,
    after     jsonb
);
CREATE INDEX audit_log_tenant ON mio.audit_log (tenant_id, id) WHERE tenant_id IS NOT NULL;
-- The log is append-only for the service.
REVOKE UPDATE, DELETE, TRUNCATE ON mio.audit_log FROM mio_runtime;

-- River's queues by state. PL/pgSQL resolves river.river_job when called:
-- River's own migrations run after MIO's, so the table may not exist yet
-- when this migration runs.
-- +goose StatementBegin
CREATE FUNCTION mio.river_queue_depth()
RETURNS TABLE (queue text, available bigint, running bigint, retryable bigint, oldest_available_age interval)
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
-- +goose StatementEnd

-- mio.queue_health (DESIGN §6): one row per consumer and one per River
-- queue. security_invoker: the caller's row-level security applies, as
-- for mio.dead_letters (set app.current_tenant_id, or be the owner); the
-- River rows are aggregates of MIO's own job queues, visible to all.
--
-- Consumer rows: pending counts deliveries waiting (after a nak or an
-- expired lease) plus messages of the stream the consumer has not yet
-- taken, the latter counted up to 10000 (no unbounded count over the
-- inbox); oldest_pending_age is the age of the oldest of those, so a
-- consumer 300 messages behind shows their age, not 0.
CREATE VIEW mio.queue_health WITH (security_invoker = true) AS
SELECT 'consumer'::text AS kind, c.tenant_id, c.name AS consumer, NULL::text AS queue,
       d.pending + u.untaken AS pending, d.ack_pending + l.leased AS ack_pending, d.redelivered, d.dead,
       coalesce(now() - least(d.oldest_pending, u.oldest_untaken), interval '0') AS oldest_pending_age,
       c.last_delivered_at,
       NULL::bigint AS available, NULL::bigint AS running, NULL::bigint AS retryable,
       NULL::interval AS oldest_available_age
FROM mio.consumer_state AS c
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE x.state = 'pending') AS pending,
           count(*) FILTER (WHERE x.state = 'leased') AS ack_pending,
           count(*) FILTER (WHERE x.state <> 'dead' AND x.delivery_count > 1) AS redelivered,
           count(*) FILTER (WHERE x.state = 'dead') AS dead,
           min(x.created_at) FILTER (WHERE x.state = 'pending') AS oldest_pending
    FROM mio.consumer_deliveries AS x
    WHERE x.tenant_id = c.tenant_id AND x.consumer_name = c.name
) AS d
CROSS JOIN LATERAL (
    -- Outstanding lease-range members (migration 00008): ranges above the
    -- consumer's sweep, less the members their settle rows name.
    SELECT coalesce(sum(cardinality(r.message_ids) - coalesce((
               SELECT sum(cardinality(s.idxs)) FROM mio.consumer_settles AS s
               WHERE s.tenant_id = r.tenant_id AND s.consumer_name = r.consumer_name AND s.lease_id = r.id), 0)), 0)::bigint AS leased
    FROM mio.consumer_leases AS r
    WHERE r.tenant_id = c.tenant_id AND r.consumer_name = c.name AND r.id > c.swept
) AS l
CROSS JOIN LATERAL (
    SELECT count(*) AS untaken, min(s.received_at) AS oldest_untaken
    FROM (
        SELECT i.received_at
        FROM mio.log_ready(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                           c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, 10000) AS i
        WHERE c.stage = 'ready'
        UNION ALL
        SELECT i.received_at
        FROM mio.log_received(c.tenant_id, c.log_lo, coalesce(c.log_hi, pg_current_snapshot()), c.cursor_xid, c.cursor_seq,
                              c.filter_channel_types, c.filter_account_ids, c.filter_conversation_ids, c.start_time, 10000) AS i
        WHERE c.stage = 'received'
    ) AS s
) AS u
UNION ALL
SELECT 'river_queue'::text AS kind, NULL::uuid AS tenant_id, NULL::text AS consumer, q.queue,
       NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::interval, NULL::timestamptz,
       q.available, q.running, q.retryable, q.oldest_available_age
FROM mio.river_queue_depth() AS q;

-- +goose Down
SET lock_timeout = '10s';
DROP VIEW IF EXISTS mio.queue_health;
DROP FUNCTION IF EXISTS mio.river_queue_depth();
DROP TABLE IF EXISTS mio.audit_log;
ALTER TABLE mio.accounts DROP COLUMN IF EXISTS webhook_secret_prev_until, DROP COLUMN IF EXISTS webhook_secret_prev_enc;
ALTER TABLE mio.tenants DROP COLUMN IF EXISTS status;
ALTER TABLE mio.admin_tokens DROP COLUMN IF EXISTS expires_at;
