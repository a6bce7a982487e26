-- Keeps mio.account_routes in step with mio.accounts: a row per account
-- (tenant and channel), written on insert and update, removed on delete.
--
-- plpgsql: a trigger function; SECURITY DEFINER, because the runtime role
-- may only read the routing table.

CREATE OR REPLACE FUNCTION mio.accounts_route() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM mio.account_routes WHERE account_id = OLD.id AND tenant_id = OLD.tenant_id;
        RETURN OLD;
    ELSIF TG_OP = 'UPDATE' THEN
        IF NEW.id <> OLD.id OR NEW.tenant_id <> OLD.tenant_id OR NEW.channel_type <> OLD.channel_type THEN
            RAISE EXCEPTION 'account id, tenant and channel type are immutable' USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END IF;
    -- A plain insert: an account id already routed (to any tenant) is a
    -- unique violation, so no tenant can capture another's webhooks.
    INSERT INTO mio.account_routes (account_id, tenant_id, channel_type)
    VALUES (NEW.id, NEW.tenant_id, NEW.channel_type);
    RETURN NEW;
END
$$;
