-- Folds each tenant's delta rows into one row per key (DELETE and INSERT
-- in one statement: a reader sees the rows before or after, the same
-- sums; rows a concurrent fold deleted first are neither deleted nor
-- summed again). Only keys with more than one row are rewritten. Returns
-- the rows folded away.
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.stream_counts_fold() RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    t uuid;
    k bigint;
    folded bigint := 0;
BEGIN
    FOR t IN SELECT x.id FROM mio.tenants AS x ORDER BY x.id LOOP
        PERFORM set_config('app.current_tenant_id', t::text, true);
        WITH keys AS (
            SELECT s.stage, s.channel_type, s.account_id FROM mio.stream_counts AS s
            WHERE s.tenant_id = t
            GROUP BY s.stage, s.channel_type, s.account_id
            HAVING count(*) > 1
        ), d AS (
            DELETE FROM mio.stream_counts AS s
            USING keys
            WHERE s.tenant_id = t AND s.stage = keys.stage AND s.channel_type = keys.channel_type AND s.account_id = keys.account_id
            RETURNING s.stage, s.channel_type, s.account_id, s.n
        ), ins AS (
            INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
            SELECT t, d.stage, d.channel_type, d.account_id, sum(d.n) FROM d
            GROUP BY d.stage, d.channel_type, d.account_id
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM d) - (SELECT count(*) FROM ins) INTO k;
        folded := folded + k;
    END LOOP;
    PERFORM set_config('app.current_tenant_id', '', true);
    RETURN folded;
END
$$;

GRANT ALL ON FUNCTION mio.stream_counts_fold() TO mio_runtime;
