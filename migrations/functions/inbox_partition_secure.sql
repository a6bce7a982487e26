-- Row-level security and grants for one inbox partition: reachable by
-- name (retention prunes inbox_default directly), so it carries the
-- parent's policy.
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.inbox_partition_secure(p_name text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
BEGIN
    EXECUTE format('ALTER TABLE mio.%I ENABLE ROW LEVEL SECURITY', p_name);
    EXECUTE format('ALTER TABLE mio.%I FORCE ROW LEVEL SECURITY', p_name);
    EXECUTE format('CREATE POLICY tenant_isolation ON mio.%I USING (tenant_id = mio.current_tenant_id())'
                   ' WITH CHECK (tenant_id = mio.current_tenant_id())', p_name);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON mio.%I TO mio_runtime', p_name);
END
$$;

REVOKE ALL ON FUNCTION mio.inbox_partition_secure(p_name text) FROM PUBLIC;
