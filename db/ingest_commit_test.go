package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

// ingestAccount creates a tenant with one webhook account.
func ingestAccount(t *testing.T, env *dbtest.Env) (tenant, account uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	tenant = uuid.New()
	_, err := db.TenantInsert(ctx, env.Pool, tenant, "t "+tenant.String()[:8])
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, env.Pool, tenant, func(tx pgx.Tx) error {
		a, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: tenant, ChannelType: "webhook", DisplayName: "w"})
		account = a.ID
		return err
	}))
	return tenant, account
}

// inboxRow is a ready row of account with source id src, conversation
// conv and platform id plat ("" for none).
func inboxRow(account uuid.UUID, src, conv, plat string) db.InboxRow {
	return db.InboxRow{ID: uuid.Must(uuid.NewV7()), AccountID: account, ChannelType: "webhook", SourceMessageID: src,
		ConversationID: conv, State: db.InboxReady, Envelope: fmt.Appendf(nil, `{"source_message_id":%q}`, src),
		Raw: []byte("{}"), ReceivedAt: time.Now(), PlatformMessageID: plat}
}

// TestIngestCommitAllOrNothing: IngestCommit sends no BEGIN or COMMIT and
// relies on PostgreSQL running the pipeline up to its Sync as one
// implicit transaction. A failure in a later group leaves nothing of an
// earlier one, and the transaction-local tenant setting does not outlive
// the commit on the connection.
func TestIngestCommitAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.NewWith(t, dbtest.Options{MaxConns: 1})
	tenantA, accountA := ingestAccount(t, env)
	tenantB, _ := ingestAccount(t, env)

	good := inboxRow(accountA, "a1", "c1", "p1")
	// B's row names an account that does not exist: its foreign key fails
	// the second group's statement.
	_, err := db.IngestCommit(ctx, env.Pool, []db.IngestGroup{
		{TenantID: tenantA, Rows: []db.InboxRow{good}},
		{TenantID: tenantB, Rows: []db.InboxRow{inboxRow(uuid.New(), "b1", "c1", "")}},
	})
	require.Error(t, err)
	owner := env.OwnerPool(t)
	var n int
	require.NoError(t, owner.QueryRow(ctx, "SELECT (SELECT count(*) FROM mio.inbox) + (SELECT count(*) FROM mio.inbound_dedup) + (SELECT count(*) FROM mio.inbound_refs)").Scan(&n))
	require.Zero(t, n, "nothing of the failed commit's first group may survive")

	res, err := db.IngestCommit(ctx, env.Pool, []db.IngestGroup{{TenantID: tenantA, Rows: []db.InboxRow{good}}})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{good.ID}, res[0].Inserted)
	// The pool's only connection: the tenant setting was local to the
	// commit's transaction.
	var tenant string
	require.NoError(t, env.Pool.QueryRow(ctx, "SELECT coalesce(current_setting('app.current_tenant_id', true), '')").Scan(&tenant))
	require.Empty(t, tenant)
}

// TestInboxInsertStatementsAgree: the plain insert statement (batches
// without an edit) and the full one store and skip the same messages:
// redeliveries by source id, within a batch and across batches, and
// messages already stored under the same platform id in the same
// conversation; rows go in in request order.
func TestInboxInsertStatementsAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	batches := [][][3]string{ // source id, conversation, platform id
		{{"s1", "c1", "p1"}, {"s2", "c1", ""}, {"s1", "c1", "p1"}, {"s3", "c1", "p3"}, {"s6", "c1", "p3"}},
		{{"s1", "c1", "p1"}, {"s4", "c1", "p1"}, {"s5", "c2", "p1"}, {"s2", "c9", ""}, {"s7", "c1", ""}},
	}
	type outcome struct {
		inserted [][]int  // per batch, the positions inserted
		stored   []string // source ids in stream order
		refs     []string // conversation/platform id -> source id
	}
	run := func(full bool) outcome {
		tenant, account := ingestAccount(t, env)
		var o outcome
		for _, batch := range batches {
			rows := make([]db.InboxRow, len(batch))
			for i, m := range batch {
				rows[i] = inboxRow(account, m[0], m[1], m[2])
			}
			var ids []uuid.UUID
			require.NoError(t, db.InTenantTx(ctx, env.Pool, tenant, func(tx pgx.Tx) error {
				var err error
				if full {
					ids, err = db.InboxInsertFull(ctx, tx, tenant, rows)
				} else {
					ids, err = db.InboxInsertBatch(ctx, tx, tenant, rows)
				}
				return err
			}))
			var pos []int
			for i, r := range rows {
				for _, id := range ids {
					if id == r.ID {
						pos = append(pos, i)
					}
				}
			}
			o.inserted = append(o.inserted, pos)
		}
		owner := env.OwnerPool(t)
		rows, err := owner.Query(ctx, "SELECT source_message_id FROM mio.inbox WHERE tenant_id = $1 ORDER BY ready_seq", tenant)
		require.NoError(t, err)
		o.stored, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		rows, err = owner.Query(ctx, "SELECT conversation_id || '/' || platform_message_id || '=' || source_message_id FROM mio.inbound_refs WHERE tenant_id = $1 ORDER BY 1", tenant)
		require.NoError(t, err)
		o.refs, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return o
	}
	plain, full := run(false), run(true)
	require.Equal(t, outcome{
		inserted: [][]int{{0, 1, 3}, {2, 4}},
		stored:   []string{"s1", "s2", "s3", "s5", "s7"},
		refs:     []string{"c1/p1=s1", "c1/p3=s3", "c2/p1=s5"},
	}, plain)
	require.Equal(t, plain, full)
}

// TestIngestKeepsGenericPlans: IngestCommit sets no plan_cache_mode, and
// its inserts still run their generic plans from a connection's sixth
// execution on (pg_prepared_statements counts the plans each prepared
// statement ran): a batch's arrays hold a few rows where a generic plan
// assumes ten, and a custom plan that saw them would win every time.
func TestIngestKeepsGenericPlans(t *testing.T) {
	t.Parallel()
	if dbtest.Pooled() {
		t.Skip("through PgBouncer in transaction mode a connection's transactions run on any server session, whose plan cache this test reads; it runs without it")
	}
	ctx := context.Background()
	env := dbtest.NewWith(t, dbtest.Options{MaxConns: 1})
	tenant, account := ingestAccount(t, env)
	for i := range 14 {
		rows := []db.InboxRow{inboxRow(account, fmt.Sprint("s", i), "c1", fmt.Sprint("p", i))}
		if i%2 == 0 {
			// An edit naming the row before it: InboxInsertBatch; the
			// other batches take InboxInsertBatchPlain.
			e := inboxRow(account, fmt.Sprint("e", i), "c1", fmt.Sprint("pe", i))
			e.EditOfPlatformID = fmt.Sprint("p", i)
			rows = append(rows, e)
		}
		events := []db.ProviderEvent{{AccountID: account, ProviderMessageID: fmt.Sprint("m", i), Status: "delivered"}}
		_, err := db.IngestCommit(ctx, env.Pool, []db.IngestGroup{{TenantID: tenant, Rows: rows, Events: events}})
		require.NoError(t, err)
	}
	plans := map[string][2]int64{}
	rows, err := env.Pool.Query(ctx, `SELECT substring(statement FROM '-- name: (\w+)'), generic_plans, custom_plans
		FROM pg_prepared_statements WHERE statement LIKE '-- name: %'`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		var generic, custom int64
		require.NoError(t, rows.Scan(&name, &generic, &custom))
		plans[name] = [2]int64{generic, custom}
	}
	require.NoError(t, rows.Err())
	// Five custom plans each, then the generic one: 7 batches with an
	// edit, 7 without, 14 with a receipt.
	for name, want := range map[string][2]int64{
		"InboxInsertBatch": {2, 5}, "InboxInsertBatchPlain": {2, 5}, "ProviderEventInsertBatch": {9, 5},
	} {
		require.Equal(t, want, plans[name], "%s: generic and custom plans", name)
	}
}
