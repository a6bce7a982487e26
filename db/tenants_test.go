package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/migrations"
)

// TestTenantCreateByName: a name is taken whatever its case; the existing
// tenant is answered, not created again.
func TestTenantCreateByName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	first, created, err := db.TenantCreate(ctx, env.Pool, "Acme")
	require.NoError(t, err)
	require.True(t, created)
	again, created, err := db.TenantCreate(ctx, env.Pool, "aCME")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first, again)
	_, err = db.TenantInsert(ctx, env.Pool, uuid.Nil, "ACME")
	require.ErrorIs(t, err, db.ErrConflict, "the unique index holds for every insert")
}

// TestTenantNameMigrationRenamesDuplicates: the migration that makes
// tenant names unique keeps the oldest of each group of names equal but
// for case and renames the later ones name-2, name-3, … (skipping names
// taken, shortening to 200 characters), auditing each rename.
func TestTenantNameMigrationRenamesDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	owner := env.OwnerPool(t)
	mig := migrations.New(owner)
	for {
		v, err := mig.Down(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, v.Version, int64(41), "rolled back past 41")
		if v.Version == 41 {
			break
		}
	}

	long := strings.Repeat("x", 200)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tenants := []struct{ name, want string }{
		{"acme", "acme"},
		{"ACME", "ACME-2"},
		{"beta-2", "beta-2"},
		{"Acme", "Acme-3"},
		{"beta", "beta"},
		{"Beta", "Beta-3"}, // beta-2 is taken
		{long, long},
		{strings.ToUpper(long), strings.Repeat("X", 198) + "-2"},
	}
	ids := make([]uuid.UUID, len(tenants))
	for i, tn := range tenants {
		ids[i] = uuid.New()
		_, err := owner.Exec(ctx, `INSERT INTO mio.tenants (id, name, created_at) VALUES ($1, $2, $3)`,
			ids[i], tn.name, t0.Add(time.Duration(i)*time.Minute))
		require.NoError(t, err)
	}
	_, err := mig.Up(ctx)
	require.NoError(t, err)

	for i, tn := range tenants {
		var name string
		require.NoError(t, owner.QueryRow(ctx, `SELECT name FROM mio.tenants WHERE id = $1`, ids[i]).Scan(&name))
		require.Equal(t, tn.want, name, "tenant %d (%.20s)", i, tn.name)
	}
	var renames int
	require.NoError(t, owner.QueryRow(ctx,
		`SELECT count(*) FROM mio.audit_log WHERE action = 'tenant.rename' AND actor = 'migration'`).Scan(&renames))
	require.Equal(t, 4, renames)
	_, err = owner.Exec(ctx, `INSERT INTO mio.tenants (id, name) VALUES ($1, 'BETA')`, uuid.New())
	require.ErrorContains(t, err, "tenants_lower_name_key")
}
