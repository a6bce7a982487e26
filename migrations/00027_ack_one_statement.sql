-- +goose Up
-- An ack in one statement (issue 15, target 5; issue 17's "mio bench
-- consume stays >= 0.6 x"). AckAll was a pipeline of six statements
-- (BEGIN, settings, the ranges' settle locks, the range ack, the
-- per-message ack, COMMIT); a consumer drain is CPU-bound, and every
-- statement costs PostgreSQL a bind, an execute and a snapshot, and MIO
-- its encoding and parsing (the pull's nine statements becoming one
-- raised mio bench consume by ~9 %). mio.consumer_ack is the whole ack
-- transaction, sent alone in an implicit transaction (synchronous commit:
-- an ack answered 200 is durable). The range ack moves here from
-- queries/consumer_leases.sql (LeaseAck); the locks and the per-message
-- ack are LeaseLock's and DeliveryAck's statements, which other paths
-- still run on their own.
SET lock_timeout = '10s';

-- mio.consumer_ack acknowledges deliveries of consumer p_name of tenant
-- p_tenant: lease-range members (p_lease_ids[k], p_idxs[k]), by appending
-- one settle row per range under the ranges' advisory settle locks (taken
-- by a statement of its own first, so the range ack's snapshot sees every
-- settlement committed before them), and per-message deliveries p_ids. A
-- range member is either outstanding in its range or has a per-message
-- row, never both, so the caller passes every id both ways. Returns the
-- members (lease_id, idx) and delivery ids that were outstanding.
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_ack(p_tenant uuid, p_name text, p_lease_ids bigint[], p_idxs int[], p_ids uuid[])
RETURNS TABLE (lease_id bigint, idx int, delivery_id uuid)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('app.current_tenant_id', p_tenant::text, true), set_config('plan_cache_mode', 'force_generic_plan', true);
    IF cardinality(p_lease_ids) > 0 THEN
        PERFORM count(pg_advisory_xact_lock(1835626348, (s.id % 2147483647)::int))
        FROM (SELECT DISTINCT u.id FROM unnest(p_lease_ids) AS u (id) ORDER BY u.id OFFSET 0) AS s;
        RETURN QUERY
        WITH req AS (
            SELECT DISTINCT u.lease_id, u.idx
            FROM (SELECT unnest(p_lease_ids) AS lease_id, unnest(p_idxs) AS idx) AS u
        ),
        l AS MATERIALIZED (
            SELECT r.id, cardinality(r.message_ids) AS n FROM mio.consumer_leases AS r
            WHERE r.tenant_id = p_tenant AND r.consumer_name = p_name AND r.id = ANY (p_lease_ids)
        ),
        done AS MATERIALIZED (
            SELECT s.lease_id, x.idx FROM mio.consumer_settles AS s CROSS JOIN LATERAL unnest(s.idxs) AS x (idx)
            WHERE s.tenant_id = p_tenant AND s.consumer_name = p_name AND s.lease_id = ANY (p_lease_ids)
        ),
        hit AS (
            SELECT req.lease_id, req.idx
            FROM req JOIN l ON l.id = req.lease_id
            WHERE req.idx >= 0 AND req.idx < l.n
              AND NOT EXISTS (SELECT 1 FROM done WHERE done.lease_id = req.lease_id AND done.idx = req.idx)
        ),
        ins AS (
            INSERT INTO mio.consumer_settles (tenant_id, consumer_name, gen, lease_id, idxs)
            SELECT p_tenant, p_name, (SELECT gen FROM mio.consumer_log_gen), hit.lease_id, array_agg(hit.idx)
            FROM hit GROUP BY hit.lease_id
        )
        SELECT hit.lease_id::bigint, hit.idx::int, NULL::uuid FROM hit;
    END IF;
    RETURN QUERY
        DELETE FROM mio.consumer_deliveries AS d
        WHERE d.tenant_id = p_tenant AND d.consumer_name = p_name AND d.state = 'leased'
          AND d.delivery_id = ANY (p_ids)
        RETURNING NULL::bigint, NULL::int, d.delivery_id;
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.consumer_ack(uuid, text, bigint[], int[], uuid[]) TO mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.consumer_ack(uuid, text, bigint[], int[], uuid[]);
