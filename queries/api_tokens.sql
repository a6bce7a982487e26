-- name: APITokenInsert :one
INSERT INTO mio.api_tokens (tenant_id, id, name, roles, token_sha256)
VALUES (@tenant_id, @id, @name, @roles, @token_sha256)
RETURNING *;

-- name: APITokenGetByHash :one
SELECT * FROM mio.api_tokens
WHERE tenant_id = @tenant_id AND token_sha256 = @token_sha256;

-- name: APITokenList :many
SELECT * FROM mio.api_tokens WHERE tenant_id = @tenant_id ORDER BY created_at, id;

-- name: APITokenPage :many
-- Keyset page of the tenant's API tokens, oldest first.
SELECT * FROM mio.api_tokens
WHERE tenant_id = @tenant_id AND (created_at, id) > (@after_created_at, @after_id::uuid)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: APITokenRevoke :one
UPDATE mio.api_tokens SET revoked_at = coalesce(revoked_at, now())
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: APITokenTouch :exec
UPDATE mio.api_tokens SET last_used_at = now()
WHERE tenant_id = @tenant_id AND id = @id
  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');
