-- name: AuditInsert :one
INSERT INTO mio.audit_log (actor, action, tenant_id, target, before, after)
VALUES (@actor, @action, sqlc.narg('tenant_id'), @target, sqlc.narg('before'), sqlc.narg('after'))
RETURNING *;

-- name: AuditList :many
-- Keyset page, newest first: rows with id below @before_id.
SELECT * FROM mio.audit_log
WHERE id < @before_id
  AND (sqlc.narg('tenant_id')::uuid IS NULL OR tenant_id = sqlc.narg('tenant_id'))
  AND (sqlc.narg('action')::text IS NULL OR action = sqlc.narg('action'))
ORDER BY id DESC
LIMIT @max_rows;
