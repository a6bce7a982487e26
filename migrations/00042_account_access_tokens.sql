-- Credentials that renew themselves: access tokens obtained from an
-- account's grant (its sealed credentials hold e.g. a Zoho refresh token),
-- shared by every MIO process, and why MIO disabled an account.
--
-- One row per account holds its current access token, sealed with the
-- master key like the credentials (bound to "<account id>/access_token").
-- credentials_enc is the account's sealed credentials the token was
-- obtained with: a token of rotated-out credentials is never used. One
-- process at a time renews an account's token (a transaction-scoped
-- advisory lock); the others read the row.

-- +goose Up
SET lock_timeout = '10s';

-- Why MIO disabled the account (its grant was refused); '' when it is
-- active or an operator disabled it. Enabling clears it.
ALTER TABLE mio.accounts ADD COLUMN disabled_reason text NOT NULL DEFAULT '';

CREATE TABLE mio.account_access_tokens (
    tenant_id       uuid        NOT NULL,
    account_id      uuid        NOT NULL,
    credentials_enc bytea       NOT NULL,
    token_enc       bytea       NOT NULL,
    expires_at      timestamptz NOT NULL,
    -- When a process needing the token renews it (before expires_at).
    renew_at        timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE mio.account_access_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.account_access_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.account_access_tokens
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- +goose Down
SET lock_timeout = '10s';
DROP TABLE IF EXISTS mio.account_access_tokens;
ALTER TABLE mio.accounts DROP COLUMN IF EXISTS disabled_reason;
