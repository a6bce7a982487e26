-- Operations plane: admin tokens with an expiry, tenants that can be
-- disabled, webhook secrets rotated with a grace period, and the audit
-- log of every operator mutation.
--
-- mio.audit_log is not tenant-scoped, like mio.admin_tokens: it records
-- the operators' actions (across tenants and on the operator plane
-- itself) and is read through the admin API, never by tenants. It holds
-- no secrets: before/after are the metadata an operator sees.

-- +goose Up
SET lock_timeout = '10s';

ALTER TABLE mio.admin_tokens ADD COLUMN expires_at timestamptz;

ALTER TABLE mio.tenants
    ADD COLUMN status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled'));

-- The previous webhook secret keeps verifying until
-- webhook_secret_prev_until, after a rotation (sealed like the current one).
ALTER TABLE mio.accounts
    ADD COLUMN webhook_secret_prev_enc   bytea,
    ADD COLUMN webhook_secret_prev_until timestamptz;

CREATE TABLE mio.audit_log (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    -- "admin:<admin token id>" or "cli:<os user>".
    actor     text        NOT NULL CHECK (actor <> ''),
    action    text        NOT NULL CHECK (action <> ''),
    tenant_id uuid,
    target    text        NOT NULL DEFAULT '',
    before    jsonb,
    after     jsonb
);
CREATE INDEX audit_log_tenant ON mio.audit_log (tenant_id, id) WHERE tenant_id IS NOT NULL;
-- The log is append-only for the service.
REVOKE UPDATE, DELETE, TRUNCATE ON mio.audit_log FROM mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP TABLE IF EXISTS mio.audit_log;
ALTER TABLE mio.accounts DROP COLUMN IF EXISTS webhook_secret_prev_until, DROP COLUMN IF EXISTS webhook_secret_prev_enc;
ALTER TABLE mio.tenants DROP COLUMN IF EXISTS status;
ALTER TABLE mio.admin_tokens DROP COLUMN IF EXISTS expires_at;
