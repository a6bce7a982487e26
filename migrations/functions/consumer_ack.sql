-- Acknowledges deliveries of consumer p_name in one statement: members of
-- lease ranges (p_lease_ids, p_idxs) are appended to mio.consumer_settles
-- under an advisory lock of each range, per-message deliveries (p_ids) are
-- deleted from mio.consumer_deliveries. Returns what it matched.
--
-- plpgsql: sets the transaction's tenant, takes the range locks, then
-- returns the matches of two statements. The statements read the tenant,
-- the consumer and the arrays through sub-selects, values no plan can see:
-- a custom plan then costs what the generic one does, and plpgsql keeps
-- the generic plan from the sixth call of a session on, without a
-- plan_cache_mode setting (planning a statement of the consumers'
-- partitioned tables costs more than running it).

CREATE OR REPLACE FUNCTION mio.consumer_ack(p_tenant uuid, p_name text, p_lease_ids bigint[], p_idxs integer[], p_ids uuid[]) RETURNS TABLE(lease_id bigint, idx integer, delivery_id uuid)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('app.current_tenant_id', p_tenant::text, true);
    IF cardinality(p_lease_ids) > 0 THEN
        PERFORM count(pg_advisory_xact_lock(1835626348, (s.id % 2147483647)::int))
        FROM (SELECT DISTINCT u.id FROM unnest((SELECT p_lease_ids)) AS u (id) ORDER BY u.id OFFSET 0) AS s;
        RETURN QUERY
        WITH req AS (
            SELECT DISTINCT u.lease_id, u.idx
            FROM (SELECT unnest((SELECT p_lease_ids)) AS lease_id, unnest((SELECT p_idxs)) AS idx) AS u
        ),
        ids AS MATERIALIZED (
            SELECT DISTINCT u.id FROM unnest((SELECT p_lease_ids)) AS u (id)
        ),
        l AS MATERIALIZED (
            SELECT r.id, r.n FROM ids CROSS JOIN LATERAL (
                SELECT x.id, cardinality(x.message_ids) AS n FROM mio.consumer_leases AS x
                WHERE x.tenant_id = (SELECT p_tenant) AND x.consumer_name = (SELECT p_name) AND x.id = ids.id
                OFFSET 0
            ) AS r
        ),
        done AS MATERIALIZED (
            SELECT s.lease_id, x.idx FROM ids CROSS JOIN LATERAL (
                SELECT y.lease_id, y.idxs FROM mio.consumer_settles AS y
                WHERE y.tenant_id = (SELECT p_tenant) AND y.consumer_name = (SELECT p_name) AND y.lease_id = ids.id
                OFFSET 0
            ) AS s CROSS JOIN LATERAL unnest(s.idxs) AS x (idx)
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
        WHERE d.tenant_id = (SELECT p_tenant) AND d.consumer_name = (SELECT p_name) AND d.state = 'leased'
          AND d.delivery_id = ANY ((SELECT p_ids)::uuid[])
        RETURNING NULL::bigint, NULL::int, d.delivery_id;
END
$$;

GRANT ALL ON FUNCTION mio.consumer_ack(p_tenant uuid, p_name text, p_lease_ids bigint[], p_idxs integer[], p_ids uuid[]) TO mio_runtime;
