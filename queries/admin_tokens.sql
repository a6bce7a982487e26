-- name: AdminTokenInsert :one
INSERT INTO mio.admin_tokens (id, name, roles, token_sha256)
VALUES (@id, @name, @roles, @token_sha256)
RETURNING *;

-- name: AdminTokenGetByHash :one
SELECT * FROM mio.admin_tokens WHERE token_sha256 = @token_sha256;
