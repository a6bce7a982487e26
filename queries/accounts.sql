-- name: AccountInsert :one
INSERT INTO mio.accounts (
    tenant_id, id, channel_type, display_name, external_id, settings,
    credentials_enc, webhook_secret_enc, rate_limit_per_sec, rate_limit_burst, max_attempts
) VALUES (
    @tenant_id, @id, @channel_type, @display_name, @external_id, @settings,
    @credentials_enc, @webhook_secret_enc, sqlc.narg('rate_limit_per_sec'), sqlc.narg('rate_limit_burst'), sqlc.narg('max_attempts')
)
RETURNING *;

-- name: AccountGet :one
SELECT * FROM mio.accounts WHERE tenant_id = @tenant_id AND id = @id;

-- name: AccountGetMany :many
SELECT * FROM mio.accounts WHERE tenant_id = @tenant_id AND id = ANY(@ids::uuid[]);

-- name: AccountPage :many
-- Keyset page of the tenant's accounts, oldest first.
SELECT * FROM mio.accounts
WHERE tenant_id = @tenant_id AND (created_at, id) > (@after_created_at, @after_id::uuid)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: AccountList :many
SELECT * FROM mio.accounts
WHERE tenant_id = @tenant_id
  AND (sqlc.narg('channel_type')::text IS NULL OR channel_type = sqlc.narg('channel_type'))
ORDER BY created_at, id;

-- name: AccountSetStatus :one
-- An operator's enable or disable: either clears why MIO disabled it.
UPDATE mio.accounts SET status = @status, disabled_reason = '', updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: AccountRoute :one
-- Resolves an account id from a webhook URL to its tenant. Not
-- tenant-scoped: the routing table holds only (account, tenant, channel).
SELECT account_id, tenant_id, channel_type FROM mio.account_routes WHERE account_id = @account_id;

-- name: AccountDisableRefused :execrows
-- MIO disables an active account whose grant the platform refused, with
-- the reason, only while the account still has the credentials that
-- were refused (@credentials_enc): credentials rotated meanwhile are not
-- condemned by the refusal of the old ones.
UPDATE mio.accounts SET status = 'disabled', disabled_reason = @disabled_reason, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND status = 'active' AND credentials_enc = @credentials_enc;
