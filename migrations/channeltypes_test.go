package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/migrations"
)

// TestChannelTypesFollowTheRegistry: Up upserts the registry's channels
// into mio.channel_types and marks the others unregistered, keeping a row
// an account still names; Check reports a registered channel without a
// row; RegisterChannelTypes (mio serve at start) adds it without
// unregistering anything.
func TestChannelTypesFollowTheRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	owner := env.OwnerPool(t)
	registered := func() map[string]bool {
		rows, err := env.Pool.Query(ctx, `SELECT slug, registered FROM mio.channel_types`)
		require.NoError(t, err)
		out := map[string]bool{}
		for rows.Next() {
			var slug string
			var reg bool
			require.NoError(t, rows.Scan(&slug, &reg))
			out[slug] = reg
		}
		require.NoError(t, rows.Err())
		return out
	}

	m := migrations.New(owner).WithChannelTypes([]migrations.ChannelType{{Slug: "slack", DisplayName: "Slack"}, {Slug: "acme", DisplayName: "Acme Chat"}})
	applied, err := m.Up(ctx)
	require.NoError(t, err)
	require.Contains(t, applied, migrations.AppliedVersion{Source: "channel_type", Name: "acme (registered)", Applied: true})
	require.Contains(t, applied, migrations.AppliedVersion{Source: "channel_type", Name: "webhook (unregistered)", Applied: true})
	again, err := m.Up(ctx)
	require.NoError(t, err)
	require.Empty(t, again)
	require.NoError(t, m.Check(ctx))
	require.True(t, registered()["acme"])
	require.False(t, registered()["webhook"])

	tenant, _, err := db.TenantCreate(ctx, env.Pool, "acme")
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, env.Pool, tenant.ID, func(tx pgx.Tx) error {
		_, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: tenant.ID, ChannelType: "acme", DisplayName: "acme"})
		return err
	}))

	// Acme leaves the registry: its row stays for the account, unregistered.
	m = migrations.New(owner).WithChannelTypes([]migrations.ChannelType{{Slug: "slack", DisplayName: "Slack"}})
	applied, err = m.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, []migrations.AppliedVersion{{Source: "channel_type", Name: "acme (unregistered)", Applied: true}}, applied)
	reg, ok := registered()["acme"]
	require.True(t, ok)
	require.False(t, reg)
	require.NoError(t, m.Check(ctx))

	// A binary with a channel the table lacks: out of date until
	// registered; registering unregisters nothing.
	m = migrations.New(owner).WithChannelTypes([]migrations.ChannelType{{Slug: "slack", DisplayName: "Slack"}, {Slug: "beta", DisplayName: "Beta"}})
	err = m.Check(ctx)
	require.ErrorIs(t, err, migrations.ErrSchemaOutOfDate)
	require.ErrorContains(t, err, "beta")
	st, err := m.Status(ctx)
	require.NoError(t, err)
	require.Contains(t, st, migrations.AppliedVersion{Source: "channel_type", Name: "beta"})
	// The runtime role (mio serve through a pooler) may not write the
	// table: registering does nothing and Check still reports beta.
	asRuntime := migrations.New(env.Pool).WithChannelTypes([]migrations.ChannelType{{Slug: "slack", DisplayName: "Slack"}, {Slug: "beta", DisplayName: "Beta"}})
	applied, err = asRuntime.RegisterChannelTypes(ctx)
	require.NoError(t, err)
	require.Empty(t, applied)
	require.ErrorIs(t, asRuntime.Check(ctx), migrations.ErrSchemaOutOfDate)
	applied, err = m.RegisterChannelTypes(ctx)
	require.NoError(t, err)
	require.Equal(t, []migrations.AppliedVersion{{Source: "channel_type", Name: "beta (registered)", Applied: true}}, applied)
	require.NoError(t, asRuntime.Check(ctx))
	require.NoError(t, m.Check(ctx))
	require.False(t, registered()["acme"])
	require.True(t, registered()["slack"])

	// The runtime role reads the table and cannot write it.
	_, err = env.Pool.Exec(ctx, `INSERT INTO mio.channel_types (slug, display_name) VALUES ('gamma', 'Gamma')`)
	require.ErrorContains(t, err, "permission denied")
}
