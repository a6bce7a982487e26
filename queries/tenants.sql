-- name: TenantInsert :one
INSERT INTO mio.tenants (id, name) VALUES (@id, @name)
RETURNING *;

-- name: TenantGet :one
SELECT * FROM mio.tenants WHERE id = @id;

-- name: TenantList :many
SELECT * FROM mio.tenants ORDER BY created_at, id;

-- name: TenantIDs :many
-- Every tenant's id, in id order (the order maintenance walks them in).
SELECT id FROM mio.tenants ORDER BY id;

-- name: TenantInsertNew :one
-- Inserts a tenant unless its name is taken (compared case-insensitively):
-- then no row.
INSERT INTO mio.tenants (id, name) VALUES (@id, @name)
ON CONFLICT ((lower(name))) DO NOTHING
RETURNING *;

-- name: TenantGetByName :one
SELECT * FROM mio.tenants WHERE lower(name) = lower(@name);
