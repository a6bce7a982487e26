-- The tenant of the current transaction, or NULL when none is set (then
-- every tenant_isolation policy matches no row).
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.current_tenant_id() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('app.current_tenant_id', true), '')::uuid $$;
