package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
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
