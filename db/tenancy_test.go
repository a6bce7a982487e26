package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

type tenancyBundle struct {
	env        *dbtest.Env
	tenantA    uuid.UUID
	tenantB    uuid.UUID
	accountB   *db.Account
	tokenBHash []byte
}

func setupTenancy(t *testing.T) *tenancyBundle {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	b := &tenancyBundle{env: env, tenantA: uuid.New(), tenantB: uuid.New()}
	for _, id := range []uuid.UUID{b.tenantA, b.tenantB} {
		_, err := db.TenantInsert(ctx, env.Pool, id, "tenant "+id.String()[:8])
		require.NoError(t, err)
	}
	require.NoError(t, db.InTenantTx(ctx, env.Pool, b.tenantB, func(tx pgx.Tx) error {
		var err error
		b.accountB, err = db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: b.tenantB, ChannelType: "webhook", DisplayName: "B hook"})
		if err != nil {
			return err
		}
		_, b.tokenBHash = db.NewAPITokenSecret(b.tenantB)
		_, err = db.APITokenInsert(ctx, tx, b.tenantB, "b", []db.Role{db.RoleConsume}, b.tokenBHash)
		return err
	}))
	return b
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OtherTenantInvisible", func(t *testing.T) {
		t.Parallel()
		b := setupTenancy(t)
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenantA, func(tx pgx.Tx) error {
			// Even naming B's tenant explicitly, RLS hides B's rows.
			_, err := db.AccountGet(ctx, tx, b.tenantB, b.accountB.ID)
			require.ErrorIs(t, err, db.ErrNotFound)
			accts, err := db.AccountList(ctx, tx, b.tenantB, "")
			require.NoError(t, err)
			require.Empty(t, accts)
			toks, err := db.APITokenList(ctx, tx, b.tenantB)
			require.NoError(t, err)
			require.Empty(t, toks)
			_, err = db.APITokenAuthenticate(ctx, tx, b.tenantB, b.tokenBHash)
			require.ErrorIs(t, err, db.ErrBadToken)
			return nil
		}))
	})

	t.Run("OtherTenantNotUpdatable", func(t *testing.T) {
		t.Parallel()
		b := setupTenancy(t)
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenantA, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, "UPDATE mio.accounts SET status = 'disabled'")
			require.NoError(t, err)
			require.Zero(t, tag.RowsAffected())
			tag, err = tx.Exec(ctx, "UPDATE mio.api_tokens SET revoked_at = now()")
			require.NoError(t, err)
			require.Zero(t, tag.RowsAffected())
			tag, err = tx.Exec(ctx, "DELETE FROM mio.accounts")
			require.NoError(t, err)
			require.Zero(t, tag.RowsAffected())
			return nil
		}))
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenantB, func(tx pgx.Tx) error {
			a, err := db.AccountGet(ctx, tx, b.tenantB, b.accountB.ID)
			require.NoError(t, err)
			require.Equal(t, db.AccountActive, a.Status)
			return nil
		}))
	})

	t.Run("NoTenantNoRows", func(t *testing.T) {
		t.Parallel()
		b := setupTenancy(t)
		for _, table := range []string{"mio.accounts", "mio.api_tokens"} {
			var n int
			require.NoError(t, b.env.Pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
			require.Zero(t, n, table)
		}
		// And the service cannot step around it: the runtime role has no
		// BYPASSRLS and is not the superuser.
		var bypass, super bool
		require.NoError(t, b.env.Pool.QueryRow(ctx, "SELECT rolbypassrls, rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&bypass, &super))
		require.False(t, bypass)
		require.False(t, super)
		// Tenant setting does not leak to the next transaction on the
		// same pooled connection.
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenantB, func(pgx.Tx) error { return nil }))
		var n int
		require.NoError(t, b.env.Pool.QueryRow(ctx, "SELECT count(*) FROM mio.accounts").Scan(&n))
		require.Zero(t, n)
	})

	t.Run("InsertForOtherTenantFails", func(t *testing.T) {
		t.Parallel()
		b := setupTenancy(t)
		err := db.InTenantTx(ctx, b.env.Pool, b.tenantA, func(tx pgx.Tx) error {
			_, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: b.tenantB, ChannelType: "slack", DisplayName: "sneaky"})
			return err
		})
		require.Error(t, err)
		require.Contains(t, err.Error(), "row-level security")
		err = db.InTenantTx(ctx, b.env.Pool, b.tenantA, func(tx pgx.Tx) error {
			_, hash := db.NewAPITokenSecret(b.tenantB)
			_, err := db.APITokenInsert(ctx, tx, b.tenantB, "sneaky", []db.Role{db.RoleRead}, hash)
			return err
		})
		require.Error(t, err)
	})

	t.Run("AccountIDCannotBeCaptured", func(t *testing.T) {
		t.Parallel()
		b := setupTenancy(t)
		// Tenant A re-using B's account id would capture B's webhooks; the
		// routing table refuses it.
		err := db.InTenantTx(ctx, b.env.Pool, b.tenantA, func(tx pgx.Tx) error {
			_, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: b.tenantA, ID: b.accountB.ID, ChannelType: "webhook", DisplayName: "capture"})
			return err
		})
		require.ErrorIs(t, err, db.ErrConflict)
		route, err := db.AccountRouteGet(ctx, b.env.Pool, b.accountB.ID)
		require.NoError(t, err)
		require.Equal(t, b.tenantB, route.TenantID)
	})
}

// TestAccountUnknownChannelType: an account's channel_type references
// mio.channel_types; a slug it does not hold is ErrUnknownChannelType.
func TestAccountUnknownChannelType(t *testing.T) {
	t.Parallel()
	b := setupTenancy(t)
	err := db.InTenantTx(context.Background(), b.env.Pool, b.tenantA, func(tx pgx.Tx) error {
		_, err := db.AccountInsert(context.Background(), tx, &db.AccountInsertParams{TenantID: b.tenantA, ChannelType: "icq", DisplayName: "icq"})
		return err
	})
	require.ErrorIs(t, err, db.ErrUnknownChannelType)
	require.ErrorContains(t, err, "icq")
}

func TestAPITokenParse(t *testing.T) {
	t.Parallel()
	tenant := uuid.New()
	tok, hash := db.NewAPITokenSecret(tenant)
	got, gotHash, err := db.ParseAPIToken(tok)
	require.NoError(t, err)
	require.Equal(t, tenant, got)
	require.Equal(t, hash, gotHash)
	for _, bad := range []string{"", "mio_", "Bearer x", tok[:len(tok)-1], "mio_zz" + tok[6:]} {
		_, _, err := db.ParseAPIToken(bad)
		require.ErrorIs(t, err, db.ErrBadToken, bad)
	}
}
