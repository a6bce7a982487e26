-- Recreates the views and functions bound to table p_old's row type on the
-- table that now has its name (their text names the old table qualified
-- under the function's search path). A tool for replacing mio.inbox.
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.inbox_rebind(p_old regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
DECLARE
    r record;
    def text;
    saved text[] := '{}';
    fns oid[];
BEGIN
    -- Views reading the table: CREATE OR REPLACE VIEW resets the options
    -- it is not given (security_invoker), so they are given again.
    FOR r IN SELECT DISTINCT v.oid::regclass::text AS view, v.reloptions
             FROM pg_depend AS d JOIN pg_rewrite AS w ON w.oid = d.objid JOIN pg_class AS v ON v.oid = w.ev_class
             WHERE d.refobjid = p_old AND v.oid <> p_old LOOP
        def := replace(pg_get_viewdef(r.view::regclass), p_old::text, 'mio.inbox');
        EXECUTE format('CREATE OR REPLACE VIEW %s%s AS %s', r.view,
                       CASE WHEN r.reloptions IS NULL THEN '' ELSE ' WITH (' || array_to_string(r.reloptions, ', ') || ')' END, def);
    END LOOP;
    -- Functions returning its rows (mio.log_ready, mio.log_received) are
    -- dropped and created again; the views calling them (mio.queue_health)
    -- are saved, dropped, and created again after them.
    SELECT array_agg(p.oid) INTO fns FROM pg_proc AS p
    WHERE p.prorettype = (SELECT reltype FROM pg_class WHERE oid = p_old);
    FOR r IN SELECT DISTINCT v.oid::regclass::text AS view, v.reloptions
             FROM pg_depend AS d JOIN pg_rewrite AS w ON w.oid = d.objid JOIN pg_class AS v ON v.oid = w.ev_class
             WHERE d.refobjid = ANY (fns) LOOP
        saved := saved || format('CREATE VIEW %s%s AS %s', r.view,
            CASE WHEN r.reloptions IS NULL THEN '' ELSE ' WITH (' || array_to_string(r.reloptions, ', ') || ')' END,
            pg_get_viewdef(r.view::regclass));
        EXECUTE format('DROP VIEW %s', r.view);
    END LOOP;
    FOR r IN SELECT unnest(fns) AS oid LOOP
        def := replace(pg_get_functiondef(r.oid), p_old::text, 'mio.inbox');
        EXECUTE format('DROP FUNCTION %s', r.oid::regprocedure);
        EXECUTE def;
    END LOOP;
    FOR i IN 1 .. cardinality(saved) LOOP
        EXECUTE saved[i];
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION mio.inbox_rebind(p_old regclass) FROM PUBLIC;
