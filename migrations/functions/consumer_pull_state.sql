-- Everything a pull needs before claiming (db.ConsumerPullState): live
-- leases, whether anything is due again, lease ranges outstanding and
-- expired, the sweep, and the window's hi (the consumer's open window, else
-- the snapshot of the calling statement: STABLE, so it runs on its caller's
-- snapshot, taken once the consumer's row lock is granted). Sequential scans
-- off: every read is an index range of one consumer above its sweep (a few
-- rows), which a generic plan cannot see (it cannot know the sweep's value).
--
-- plpgsql: several reads into one row.

CREATE OR REPLACE FUNCTION mio.consumer_pull_state(p_tenant uuid, p_name text) RETURNS TABLE(leased bigint, due boolean, ranges boolean, ranges_expired boolean, swept bigint, hi text)
    LANGUAGE plpgsql STABLE
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    RETURN QUERY
    WITH c AS MATERIALIZED (
        SELECT s.swept, s.log_hi FROM mio.consumer_state AS s WHERE s.tenant_id = p_tenant AND s.name = p_name
    ),
    rr AS MATERIALIZED (
        SELECT r.id, r.expires_at, cardinality(r.message_ids) AS n
        FROM mio.consumer_leases AS r
        WHERE r.tenant_id = p_tenant AND r.consumer_name = p_name AND r.id > (SELECT c.swept FROM c)
    ),
    st AS MATERIALIZED (
        SELECT x.lease_id, sum(cardinality(x.idxs)) AS settled
        FROM mio.consumer_settles AS x
        WHERE x.tenant_id = p_tenant AND x.consumer_name = p_name AND x.lease_id > (SELECT c.swept FROM c)
        GROUP BY x.lease_id
    ),
    r AS MATERIALIZED (
        SELECT rr.id, rr.expires_at, rr.n - coalesce(st.settled, 0) AS outstanding
        FROM rr LEFT JOIN st ON st.lease_id = rr.id
    )
    SELECT
        ((SELECT count(*) FROM mio.consumer_deliveries AS l
          WHERE l.tenant_id = p_tenant AND l.consumer_name = p_name AND l.state = 'leased' AND l.lease_expires_at > now())
         + (SELECT coalesce(sum(r.outstanding), 0) FROM r WHERE r.expires_at > now()))::bigint,
        (EXISTS (SELECT 1 FROM mio.consumer_deliveries AS p
                 WHERE p.tenant_id = p_tenant AND p.consumer_name = p_name AND p.state = 'pending' AND p.available_at <= now())
         OR EXISTS (SELECT 1 FROM mio.consumer_deliveries AS e
                    WHERE e.tenant_id = p_tenant AND e.consumer_name = p_name AND e.state = 'leased' AND e.lease_expires_at <= now())),
        EXISTS (SELECT 1 FROM r WHERE r.outstanding > 0),
        EXISTS (SELECT 1 FROM r WHERE r.outstanding > 0 AND r.expires_at <= now()),
        coalesce((SELECT min(r.id) - 1 FROM r WHERE r.outstanding > 0), (SELECT max(r.id) FROM r), (SELECT c.swept FROM c))::bigint,
        coalesce((SELECT c.log_hi FROM c), pg_current_snapshot())::text;
END
$$;

GRANT ALL ON FUNCTION mio.consumer_pull_state(p_tenant uuid, p_name text) TO mio_runtime;
