-- name: AccountUpdateLimits :one
-- Settings replaces the settings object; the limits are set as given
-- (NULL: the channel default).
UPDATE mio.accounts
SET settings = @settings, display_name = @display_name,
    rate_limit_per_sec = sqlc.narg('rate_limit_per_sec'), rate_limit_burst = sqlc.narg('rate_limit_burst'),
    max_attempts = sqlc.narg('max_attempts'), updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: AccountRotateWebhookSecret :one
-- The current secret becomes the previous one, verifying until @prev_until.
UPDATE mio.accounts
SET webhook_secret_prev_enc = webhook_secret_enc, webhook_secret_prev_until = @prev_until,
    webhook_secret_enc = @webhook_secret_enc, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: AccountSetCredentials :one
-- New credentials undo MIO's own disabling for a refused grant (a
-- disabled_reason); an account an operator disabled stays disabled.
UPDATE mio.accounts
SET credentials_enc = @credentials_enc,
    status = CASE WHEN disabled_reason <> '' THEN 'active' ELSE status END,
    disabled_reason = '', updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;
