package outbox_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/migrations"
	"github.com/miohq/mio/outbox"
)

// testBundle is a fresh database with two tenants, each with an active
// and a disabled webhook account, and a Service with an insert-only
// River client.
type testBundle struct {
	env   *dbtest.Env
	owner *pgxpool.Pool // bypasses RLS: counts and forced states
	svc   *outbox.Service
	a, b  testTenant
}

type testTenant struct {
	id       uuid.UUID
	account  uuid.UUID
	disabled uuid.UUID
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := t.Context()
	env := dbtest.New(t)
	adm := admin.New(env.Pool, nil, "http://mio.test")
	mk := func(name string) testTenant {
		tn, _, err := adm.TenantCreate(ctx, name)
		require.NoError(t, err)
		tt := testTenant{id: tn.ID}
		a, err := adm.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "webhook"})
		require.NoError(t, err)
		tt.account = a.ID
		d, err := adm.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "webhook"})
		require.NoError(t, err)
		_, err = adm.AccountSetStatus(ctx, tn.ID, d.ID, db.AccountDisabled)
		require.NoError(t, err)
		tt.disabled = d.ID
		return tt
	}
	rc, err := river.NewClient(riverpgxv5.New(env.Pool), &river.Config{Schema: migrations.RiverSchema})
	require.NoError(t, err)
	return &testBundle{env: env, owner: env.OwnerPool(t), svc: outbox.New(env.Pool, rc),
		a: mk("a"), b: mk("b")}
}

// cmd is a valid command of tenant tt.
func (tt testTenant) cmd(key string) *envelope.SendCommand {
	return &envelope.SendCommand{IdempotencyKey: key, AccountID: tt.account, ConversationID: "c-1", Text: "hello"}
}

// counts returns the outbox rows, their events and the dispatch jobs of
// every tenant.
func (b *testBundle) counts(t *testing.T) [3]int {
	t.Helper()
	var c [3]int
	require.NoError(t, b.owner.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM mio.outbox), (SELECT count(*) FROM mio.outbox_events),
		(SELECT count(*) FROM river.river_job WHERE kind = 'mio.dispatch')`).Scan(&c[0], &c[1], &c[2]))
	return c
}

// jobsMisnamed counts the rows whose dispatch job is missing, of another
// tenant or does not name them (in outbox_id or more), and the rows
// dispatch jobs name that do not record them: zero and zero when every
// row is dispatched by a job that stands for it (a group shares one).
func (b *testBundle) jobsMisnamed(t *testing.T) (rows, names int) {
	t.Helper()
	require.NoError(t, b.owner.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM mio.outbox o LEFT JOIN river.river_job j ON j.id = o.job_id
		 WHERE j.id IS NULL OR (j.args->>'tenant_id')::uuid <> o.tenant_id
		    OR NOT ((j.args->>'outbox_id')::uuid = o.id OR o.id::text = ANY (string_to_array(j.args->>'more', ',')))),
		(SELECT count(*) FROM river.river_job j
		 CROSS JOIN LATERAL (SELECT (j.args->>'outbox_id')::uuid AS id
		                     UNION ALL SELECT m::uuid FROM unnest(string_to_array(j.args->>'more', ',')) AS m) AS n
		 LEFT JOIN mio.outbox o ON o.id = n.id AND o.job_id = j.id
		 WHERE j.kind = 'mio.dispatch' AND o.id IS NULL)`).Scan(&rows, &names))
	return rows, names
}

// jobOf returns the dispatch job recorded on a row and its arguments'
// outbox id.
func (b *testBundle) jobOf(t *testing.T, id uuid.UUID) (jobID int64, argsOutboxID uuid.UUID) {
	t.Helper()
	require.NoError(t, b.owner.QueryRow(t.Context(), `SELECT o.job_id, (j.args->>'outbox_id')::uuid
		FROM mio.outbox o JOIN river.river_job j ON j.id = o.job_id WHERE o.id = $1`, id).Scan(&jobID, &argsOutboxID))
	return jobID, argsOutboxID
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.owner.Exec(t.Context(), sql, args...)
	require.NoError(t, err)
}
