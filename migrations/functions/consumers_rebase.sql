-- Rebases every consumer, one transaction each (its row lock, then its
-- unread rows counted once), so every consumer's pending count is exact
-- again: CALL mio.consumers_rebase() after positions were moved without
-- their taken counts.
--
-- A plpgsql procedure: it commits after each consumer.

CREATE OR REPLACE PROCEDURE mio.consumers_rebase()
    LANGUAGE plpgsql
    AS $$
DECLARE
    t uuid;
    names text[];
    n text;
BEGIN
    FOR t IN SELECT x.id FROM mio.tenants AS x ORDER BY x.id LOOP
        PERFORM set_config('app.current_tenant_id', t::text, true);
        SELECT coalesce(array_agg(c.name ORDER BY c.name), '{}') INTO names FROM mio.consumers AS c WHERE c.tenant_id = t;
        COMMIT;
        FOREACH n IN ARRAY names LOOP
            PERFORM set_config('app.current_tenant_id', t::text, true);
            PERFORM 1 FROM mio.consumers AS c WHERE c.tenant_id = t AND c.name = n FOR NO KEY UPDATE;
            PERFORM mio.consumer_rebase(t, n);
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;

GRANT ALL ON PROCEDURE mio.consumers_rebase() TO mio_runtime;
