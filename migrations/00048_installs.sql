-- One-click installs (package install) and the state they need.
--
-- mio.pending_installs: an install begun by an operator and waiting for the
-- platform's redirect. The state parameter names (tenant_id, id) and is
-- signed; the callback deletes the row in the transaction that creates the
-- account, so a state works once. The app's client credentials and the
-- webhook secret are sealed (secretbox, bound to "<id>/install_client" and
-- "<id>/install_webhook_secret").
--
-- mio.account_access_tokens.refresh_enc: a grant's refresh token as the
-- platform last rotated it (Slack issues a new one with every access token
-- and revokes the old). Stored, sealed, in the row and the transaction that
-- store the access token it came with, under the account's renewal lock.
--
-- mio.teams_service_urls: the serviceUrl of each Teams conversation's
-- latest activity, so a reply sent by any replica, or after a restart,
-- goes to the conversation's regional endpoint.

-- +goose Up
SET lock_timeout = '10s';

CREATE TABLE mio.pending_installs (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    channel_type text NOT NULL,
    display_name text NOT NULL,
    settings jsonb DEFAULT '{}'::jsonb NOT NULL,
    client_enc bytea NOT NULL,
    webhook_secret_enc bytea,
    redirect_uri text NOT NULL,
    return_url text DEFAULT '' NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT pending_installs_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT pending_installs_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id) ON DELETE CASCADE,
    CONSTRAINT pending_installs_settings_check CHECK (jsonb_typeof(settings) = 'object')
);
ALTER TABLE mio.pending_installs ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.pending_installs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.pending_installs
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

ALTER TABLE mio.account_access_tokens ADD COLUMN refresh_enc bytea;

CREATE TABLE mio.teams_service_urls (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    conversation_id text NOT NULL,
    service_url text NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT teams_service_urls_pkey PRIMARY KEY (tenant_id, account_id, conversation_id),
    CONSTRAINT teams_service_urls_account_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE mio.teams_service_urls ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.teams_service_urls FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.teams_service_urls
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- +goose Down
SET lock_timeout = '10s';

DROP TABLE mio.teams_service_urls;
ALTER TABLE mio.account_access_tokens DROP COLUMN refresh_enc;
DROP TABLE mio.pending_installs;
