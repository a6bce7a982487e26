package db_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

// pullFixture is a tenant's unordered consumer "p" of the ready stage and
// the inbox rows it reads, written as the owner.
type pullFixture struct {
	outboxFixture
	b       *outboxBundle
	tenant  uuid.UUID
	account uuid.UUID
}

func newPullFixture(t *testing.T, b *outboxBundle, tenant, account uuid.UUID) pullFixture {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, tenant, func(tx pgx.Tx) error {
		_, _, err := db.ConsumerUpsert(ctx, tx, &db.Consumer{TenantID: tenant, Name: "p", DeliverPolicy: "all",
			AckWait: time.Hour, MaxDeliver: 5, MaxAckPending: 100000, Ordering: "none", Stage: "ready"})
		return err
	}))
	return pullFixture{outboxFixture: outboxFixture{t: t, owner: b.env.OwnerPool(t)}, b: b, tenant: tenant, account: account}
}

// messages commits n ready inbox rows (today's partition) in txs
// transactions.
func (f pullFixture) messages(n, txs int) {
	f.t.Helper()
	for range txs {
		ids := make([]uuid.UUID, n/txs)
		for i := range ids {
			ids[i] = uuid.Must(uuid.NewV7())
		}
		f.exec(`INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, conversation_id, source_message_id, state,
				envelope, received_at, ready_xid, ready_seq, ready_at)
			SELECT $1, u.id, $2, 'webhook', 'c' || (u.n % 100), u.id::text, 'ready', '{}', now(),
				pg_current_xact_id(), nextval('mio.inbox_ready_seq'), now()
			FROM unnest($3::uuid[]) WITH ORDINALITY AS u (id, n)`, f.tenant, f.account, ids)
	}
}

// consume pulls and acks n ranges of up to max rows.
func (f pullFixture) consume(n, max int) {
	f.t.Helper()
	ctx := context.Background()
	for range n {
		got, steady, _, err := db.PullSteady(ctx, f.b.env.Pool, f.tenant, "p", max)
		require.NoError(f.t, err)
		require.True(f.t, steady)
		ids := make([]uuid.UUID, len(got))
		for i, d := range got {
			ids[i] = d.DeliveryID
		}
		_, err = db.AckAll(ctx, f.b.env.Pool, f.tenant, "p", ids)
		require.NoError(f.t, err)
	}
}

// hold pulls a range of up to max rows and leaves it outstanding; it
// returns the ack of all its members: lease ids and indexes.
func (f pullFixture) hold(max int) (leases []int64, idxs []int32) {
	f.t.Helper()
	ctx := context.Background()
	got, steady, _, err := db.PullSteady(ctx, f.b.env.Pool, f.tenant, "p", max)
	require.NoError(f.t, err)
	require.True(f.t, steady)
	require.NotEmpty(f.t, got)
	var lease int64
	require.NoError(f.t, f.b.env.OwnerPool(f.t).QueryRow(ctx,
		`SELECT max(id) FROM mio.consumer_leases WHERE tenant_id = $1 AND consumer_name = 'p'`, f.tenant).Scan(&lease))
	for i := range got {
		leases = append(leases, lease)
		idxs = append(idxs, int32(i))
	}
	return leases, idxs
}

// TestPullBuffers logs the buffers (shared hit and read, functions' own
// statements included) a steady pull of 100 and an ack of 100 touch per
// call on a 50,000-row inbox, warm, as the runtime role: counts that do
// not depend on the machine's load, to compare definitions with (go test
// -v -run TestPullBuffers). It asserts only that the calls take and ack
// 100.
func TestPullBuffers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	f := newPullFixture(t, b, b.tenant, b.account)
	f.messages(50000, 50)
	f.consume(200, 100)
	leases, idxs := f.hold(100)
	f.exec(`ANALYZE mio.inbox, mio.consumer_leases, mio.consumer_settles, mio.consumer_positions, mio.consumer_deliveries`)
	tenant := b.tenant.String()

	explain := func(tx pgx.Tx, sql string, args ...any) (rows, hit, read int64) {
		var out []byte
		require.NoError(t, tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) `+sql, args...).Scan(&out), sql)
		var plans []struct {
			Plan struct {
				Rows int64 `json:"Actual Rows"`
				Hit  int64 `json:"Shared Hit Blocks"`
				Read int64 `json:"Shared Read Blocks"`
			} `json:"Plan"`
		}
		require.NoError(t, json.Unmarshal(out, &plans))
		return plans[0].Plan.Rows, plans[0].Plan.Hit, plans[0].Plan.Read
	}
	// One session, as a consumer's pooled connection: plpgsql caches
	// plans per session, and chooses between custom and generic plans
	// after five calls.
	conn, err := b.env.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for i := range 11 {
		for _, call := range []struct {
			name string
			sql  string
			args []any
		}{
			{"consumer_pull_steady of 100", `SELECT * FROM mio.consumer_pull_steady($1, 'p', 100)`, []any{tenant}},
			{"consumer_ack of 100", `SELECT * FROM mio.consumer_ack($1, 'p', $2::bigint[], $3::int[], '{}')`,
				[]any{tenant, leases, idxs}},
		} {
			tx, err := conn.Begin(ctx)
			require.NoError(t, err)
			rows, hit, read := explain(tx, call.sql, call.args...)
			require.NoError(t, tx.Rollback(ctx))
			require.Equal(t, int64(100), rows, call.name)
			if i == 10 {
				t.Logf("%-30s shared hit %5d, read %4d", call.name, hit, read)
			}
		}
	}
}

// TestAckKeepsGenericPlans: mio.consumer_ack sets no plan_cache_mode, and
// its statements still run their generic plans from the sixth call of a
// session on, for the one-member acks a client sends most (a custom plan
// sees one element where the generic plan assumes ten, and would win
// every time were the values visible). Under auto_explain with verbose
// output a custom plan shows the call's tenant as a literal, a generic one
// as a parameter.
func TestAckKeepsGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	f := newPullFixture(t, b, b.tenant, b.account)
	f.messages(1000, 10)
	f.consume(5, 10)
	leases, idxs := f.hold(10)
	s := newPlanSession(t, b.env)
	_, err := s.conn.Exec(ctx, `RESET ROLE; SET auto_explain.log_verbose = on; SET ROLE `+dbtest.RuntimeRole)
	require.NoError(t, err)
	tenant := b.tenant.String()
	for call := range 8 {
		tx, err := s.conn.Begin(ctx)
		require.NoError(t, err)
		s.plans = s.plans[:0]
		var n int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM mio.consumer_ack($1, 'p', $2::bigint[], $3::int[], $4::uuid[])`,
			tenant, leases[:1], idxs[:1], []uuid.UUID{uuid.New()}).Scan(&n))
		require.NoError(t, tx.Rollback(ctx))
		require.Equal(t, int64(1), n)
		var statements int
		for _, p := range s.plans {
			var e explained
			require.NoError(t, json.Unmarshal([]byte(p), &e), p)
			if !strings.Contains(e.Query, "consumer_") || strings.Contains(e.Query, "mio.consumer_ack(") {
				continue
			}
			statements++
			if call < 5 {
				require.Contains(t, p, tenant, "call %d: plpgsql's first five plans are custom", call+1)
			} else {
				require.NotContains(t, p, tenant, "call %d ran a custom plan:\n%s", call+1, e.Query)
			}
		}
		require.Equal(t, 2, statements, "the range ack and the per-message ack")
	}
}

// TestAckLiveKeepsGenericPlans: db.AckLive (a reply with ack) sets no
// plan_cache_mode, and its range ack and per-message ack still run their
// generic plans from a connection's sixth ack on, for one-member acks, as
// TestAckKeepsGenericPlans checks for mio.consumer_ack.
func TestAckLiveKeepsGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	f := newPullFixture(t, b, b.tenant, b.account)
	f.messages(1000, 10)
	f.consume(5, 10)
	leases, idxs := f.hold(10)
	s := newPlanSession(t, b.env)
	_, err := s.conn.Exec(ctx, `RESET ROLE; SET auto_explain.log_verbose = on; SET ROLE `+dbtest.RuntimeRole)
	require.NoError(t, err)
	tenant := b.tenant.String()
	ids := []uuid.UUID{db.LeaseDeliveryID(leases[0], int(idxs[0])), uuid.New()}
	for call := range 8 {
		tx, err := s.conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT set_config('app.current_tenant_id', $1, true)`, tenant)
		require.NoError(t, err)
		s.plans = s.plans[:0]
		acked, err := db.AckLive(ctx, tx, b.tenant, "p", ids)
		require.NoError(t, err)
		require.NoError(t, tx.Rollback(ctx))
		require.Len(t, acked, 1)
		var statements int
		for _, p := range s.plans {
			var e explained
			require.NoError(t, json.Unmarshal([]byte(p), &e), p)
			if !strings.Contains(e.Query, "mio.consumer_") {
				continue
			}
			statements++
			if call < 5 {
				require.Contains(t, p, tenant, "ack %d: a statement's first five plans are custom", call+1)
			} else {
				require.NotContains(t, p, tenant, "ack %d ran a custom plan:\n%s", call+1, e.Query)
			}
		}
		require.Equal(t, 2, statements, "the range ack and the per-message ack")
	}
}
