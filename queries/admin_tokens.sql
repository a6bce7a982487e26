-- name: AdminTokenInsert :one
INSERT INTO mio.admin_tokens (id, name, roles, token_sha256, expires_at)
VALUES (@id, @name, @roles, @token_sha256, sqlc.narg('expires_at'))
RETURNING *;

-- name: AdminTokenGetByHash :one
SELECT * FROM mio.admin_tokens WHERE token_sha256 = @token_sha256;

-- name: AdminTokenList :many
-- Keyset page, oldest first.
SELECT * FROM mio.admin_tokens
WHERE (created_at, id) > (@after_created_at, @after_id::uuid)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: AdminTokenRevoke :one
UPDATE mio.admin_tokens SET revoked_at = coalesce(revoked_at, now())
WHERE id = @id
RETURNING *;

-- name: AdminTokenTouch :exec
UPDATE mio.admin_tokens SET last_used_at = now()
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

-- name: AdminTokenGet :one
SELECT * FROM mio.admin_tokens WHERE id = @id FOR UPDATE;

-- name: APITokenGet :one
SELECT * FROM mio.api_tokens WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;
