-- Foundation: schema mio, the runtime role, tenants, accounts, API tokens,
-- admin tokens, and row-level security keyed on app.current_tenant_id.
--
-- The service does all tenant work as mio_runtime (no BYPASSRLS); migrations
-- run as the owner. Every tenant-scoped table keeps tenant_id leading its
-- keys so the schema can later be distributed by tenant.

-- +goose Up
SET lock_timeout = '10s';

CREATE SCHEMA IF NOT EXISTS mio;
CREATE SCHEMA IF NOT EXISTS river;

-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mio_runtime') THEN
        CREATE ROLE mio_runtime NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    -- The owner must be able to SET ROLE mio_runtime on its pooled sessions.
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
       AND NOT pg_has_role(current_user, 'mio_runtime', 'MEMBER') THEN
        EXECUTE format('GRANT mio_runtime TO %I', current_user);
    END IF;
END
$$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA mio TO mio_runtime;
GRANT USAGE ON SCHEMA river TO mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA mio GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA mio GRANT USAGE, SELECT ON SEQUENCES TO mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA river GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA river GRANT USAGE, SELECT ON SEQUENCES TO mio_runtime;

-- The tenant of the current transaction, or NULL when none is set (then
-- every policy below matches no row).
CREATE FUNCTION mio.current_tenant_id() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('app.current_tenant_id', true), '')::uuid $$;

-- The tenant registry itself is not tenant-scoped (it holds only ids and
-- names), so operators can list tenants; everything a tenant owns is.
CREATE TABLE mio.tenants (
    id         uuid        PRIMARY KEY,
    name       text        NOT NULL CHECK (name <> '' AND length(name) <= 200),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Account ids appear in webhook URLs before any tenant is known. This
-- routing table maps an account id to its tenant and nothing else, so the
-- webhook path can set the tenant and read the account under RLS. It is
-- kept by a trigger on mio.accounts.
CREATE TABLE mio.account_routes (
    account_id   uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL,
    channel_type text NOT NULL
);

CREATE TABLE mio.accounts (
    tenant_id          uuid        NOT NULL REFERENCES mio.tenants (id),
    id                 uuid        NOT NULL,
    channel_type       text        NOT NULL CHECK (channel_type IN ('slack', 'telegram', 'discord', 'zoho_cliq', 'whatsapp', 'webhook')),
    display_name       text        NOT NULL CHECK (display_name <> '' AND length(display_name) <= 200),
    external_id        text        NOT NULL DEFAULT '',
    status             text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    -- Plain, non-secret adapter settings (JSON object).
    settings           jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    -- AES-256-GCM sealed JSON credentials and webhook secret (MIO_MASTER_KEY).
    credentials_enc    bytea,
    webhook_secret_enc bytea,
    -- Outbound token bucket; NULL means the channel default.
    rate_limit_per_sec double precision CHECK (rate_limit_per_sec IS NULL OR rate_limit_per_sec > 0),
    rate_limit_burst   integer     CHECK (rate_limit_burst IS NULL OR rate_limit_burst > 0),
    max_attempts       integer     CHECK (max_attempts IS NULL OR max_attempts BETWEEN 1 AND 100),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX accounts_tenant_channel ON mio.accounts (tenant_id, channel_type, status);

-- +goose StatementBegin
CREATE FUNCTION mio.accounts_route() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog
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
-- +goose StatementEnd
CREATE TRIGGER accounts_route AFTER INSERT OR UPDATE OR DELETE ON mio.accounts
    FOR EACH ROW EXECUTE FUNCTION mio.accounts_route();

CREATE TABLE mio.api_tokens (
    tenant_id    uuid        NOT NULL REFERENCES mio.tenants (id),
    id           uuid        NOT NULL,
    name         text        NOT NULL CHECK (name <> '' AND length(name) <= 200),
    roles        text[]      NOT NULL CHECK (cardinality(roles) > 0 AND roles <@ ARRAY['consume', 'produce', 'read']),
    -- sha-256 of the whole token; the token itself is never stored.
    token_sha256 bytea       NOT NULL CHECK (length(token_sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, token_sha256)
);

-- Admin tokens are not tenant-scoped: they guard the admin listener.
CREATE TABLE mio.admin_tokens (
    id           uuid        PRIMARY KEY,
    name         text        NOT NULL CHECK (name <> '' AND length(name) <= 200),
    roles        text[]      NOT NULL CHECK (cardinality(roles) > 0 AND roles <@ ARRAY['viewer', 'operator', 'credential-admin']),
    token_sha256 bytea       NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- Row-level security: forced, so the table owner is subject to it too.
ALTER TABLE mio.accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.accounts
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

ALTER TABLE mio.api_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.api_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.api_tokens
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA mio TO mio_runtime;
-- So a deployment can also log in as the runtime role and still pass the
-- schema check (goose creates its table before running this file).
GRANT SELECT ON TABLE public.mio_schema_migrations TO mio_runtime;
-- The routing table is written only by the trigger (owner rights).
REVOKE INSERT, UPDATE, DELETE ON mio.account_routes FROM mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP TABLE IF EXISTS mio.admin_tokens;
DROP TABLE IF EXISTS mio.api_tokens;
DROP TRIGGER IF EXISTS accounts_route ON mio.accounts;
DROP FUNCTION IF EXISTS mio.accounts_route();
DROP TABLE IF EXISTS mio.accounts;
DROP TABLE IF EXISTS mio.account_routes;
DROP TABLE IF EXISTS mio.tenants;
DROP FUNCTION IF EXISTS mio.current_tenant_id();
ALTER DEFAULT PRIVILEGES IN SCHEMA mio REVOKE ALL ON TABLES FROM mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA mio REVOKE ALL ON SEQUENCES FROM mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA river REVOKE ALL ON TABLES FROM mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA river REVOKE ALL ON SEQUENCES FROM mio_runtime;
REVOKE USAGE ON SCHEMA mio FROM mio_runtime;
REVOKE USAGE ON SCHEMA river FROM mio_runtime;
DROP SCHEMA IF EXISTS mio;
