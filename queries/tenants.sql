-- name: TenantInsert :one
INSERT INTO mio.tenants (id, name) VALUES (@id, @name)
RETURNING *;

-- name: TenantGet :one
SELECT * FROM mio.tenants WHERE id = @id;

-- name: TenantList :many
SELECT * FROM mio.tenants ORDER BY created_at, id;
