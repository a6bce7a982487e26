-- name: PendingInstallInsert :exec
INSERT INTO mio.pending_installs (tenant_id, id, channel_type, display_name, settings, client_enc,
    webhook_secret_enc, redirect_uri, return_url, created_by, expires_at)
VALUES (@tenant_id, @id, @channel_type, @display_name, @settings, @client_enc,
    @webhook_secret_enc, @redirect_uri, @return_url, @created_by, @expires_at);

-- name: PendingInstallTake :one
-- Deletes and returns the tenant's pending install of that channel while
-- it has not expired: a state works once.
DELETE FROM mio.pending_installs
WHERE tenant_id = @tenant_id AND id = @id AND channel_type = @channel_type AND expires_at > @now
RETURNING *;

-- name: PendingInstallPurge :execrows
-- Forgets the tenant's installs that expired before @before.
DELETE FROM mio.pending_installs WHERE tenant_id = @tenant_id AND expires_at <= @before;

-- name: PendingInstallCount :one
SELECT count(*) FROM mio.pending_installs WHERE tenant_id = @tenant_id;

-- name: AccountByExternalID :one
-- The tenant's oldest account of that channel with that external id.
SELECT * FROM mio.accounts
WHERE tenant_id = @tenant_id AND channel_type = @channel_type AND external_id = @external_id
ORDER BY created_at, id LIMIT 1;
