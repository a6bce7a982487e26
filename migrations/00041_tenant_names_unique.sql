-- +goose Up
-- Tenant names are unique, compared case-insensitively: creating a tenant
-- whose name exists answers the existing tenant (mio admin tenant create,
-- POST /admin/v1/tenants, mio dev's demo tenant), so a repeated create
-- never makes a second one.
--
-- A database may already hold tenants whose names differ only in case,
-- or not at all. Of each such group the oldest (created_at, then id) keeps
-- its name; each later one is renamed, in the same order, to
-- "<name>-<k>" with k its place in the group (2, 3, …), or the next k
-- whose name is free, the name shortened to fit the 200-character limit.
-- Ids, and so everything a tenant owns, are unchanged; the renames are
-- written to mio.audit_log as tenant.rename by actor migration.
-- TestTenantNameMigrationRenamesDuplicates (db) holds this.
SET lock_timeout = '10s';
LOCK TABLE mio.tenants IN SHARE ROW EXCLUSIVE MODE;
-- +goose StatementBegin
DO $$
DECLARE
    r         record;
    k         int;
    candidate text;
BEGIN
    FOR r IN
        SELECT t.id, t.name, t.rank
        FROM (
            SELECT id, name, created_at,
                   row_number() OVER (PARTITION BY lower(name) ORDER BY created_at, id) AS rank
            FROM mio.tenants
        ) AS t
        WHERE t.rank > 1
        ORDER BY lower(t.name), t.created_at, t.id
    LOOP
        k := r.rank;
        LOOP
            candidate := left(r.name, 200 - length('-' || k)) || '-' || k;
            EXIT WHEN NOT EXISTS (SELECT 1 FROM mio.tenants WHERE lower(name) = lower(candidate));
            k := k + 1;
        END LOOP;
        UPDATE mio.tenants SET name = candidate WHERE id = r.id;
        INSERT INTO mio.audit_log (actor, action, tenant_id, target, before, after)
        VALUES ('migration', 'tenant.rename', r.id, r.id::text,
                jsonb_build_object('name', r.name), jsonb_build_object('name', candidate));
    END LOOP;
END
$$;
-- +goose StatementEnd
CREATE UNIQUE INDEX tenants_lower_name_key ON mio.tenants (lower(name));

-- +goose Down
SET lock_timeout = '10s';
DROP INDEX IF EXISTS mio.tenants_lower_name_key;
