-- name: TenantSetStatus :one
UPDATE mio.tenants SET status = @status WHERE id = @id
RETURNING *;

-- name: TenantPage :many
-- Keyset page, oldest first.
SELECT * FROM mio.tenants
WHERE (created_at, id) > (@after_created_at, @after_id::uuid)
ORDER BY created_at, id
LIMIT @max_rows;
