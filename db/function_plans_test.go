package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

// planSession is a session as the runtime role that receives the plan of
// every statement it runs, those inside functions included (auto_explain,
// its log sent to the client as notices), as executed: a plpgsql
// statement's custom plan, or the generic plan it caches.
type planSession struct {
	t     *testing.T
	conn  *pgx.Conn
	plans []string
}

func newPlanSession(t *testing.T, env *dbtest.Env, settings ...string) *planSession {
	t.Helper()
	ctx := context.Background()
	s := &planSession{t: t}
	cfg, err := pgx.ParseConfig(env.OwnerURL)
	require.NoError(t, err)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if i := strings.Index(n.Message, "plan:\n"); i >= 0 {
			s.plans = append(s.plans, n.Message[i+len("plan:\n"):])
		}
	}
	s.conn, err = pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.conn.Close(context.Background()) })
	for _, q := range []string{
		`LOAD 'auto_explain'`,
		`SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_format = json`,
		`SET auto_explain.log_level = notice`,
		`SET ROLE ` + dbtest.RuntimeRole,
	} {
		_, err := s.conn.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	for _, q := range settings {
		_, err := s.conn.Exec(ctx, "SET "+q)
		require.NoError(t, err, q)
	}
	return s
}

// explained is a statement's plan as auto_explain writes it.
type explained struct {
	Query string   `json:"Query Text"`
	Plan  planNode `json:"Plan"`
}

type planNode struct {
	Type      string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Index     string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Cost      float64    `json:"Total Cost"`
	Rows      float64    `json:"Plan Rows"`
	Plans     []planNode `json:"Plans"`
}

// watchedTables are the tables whose rows grow with traffic: a plan may
// reach their rows only through an index range narrower than the tenant,
// or by TID.
var watchedTables = map[string]bool{
	"outbox": true, "outbox_events": true, "inbox": true, "consumer_deliveries": true,
	"consumer_leases": true, "consumer_settles": true, "consumer_positions": true,
}

// partition is the suffix of a partition's name (inbox_p20261128,
// inbox_default, consumer_leases_0).
var partition = regexp.MustCompile(`_(p\d+|default|\d)$`)

// watched: rel is a watched table or one of its partitions.
func watched(rel string) bool { return watchedTables[partition.ReplaceAllString(rel, "")] }

// narrowerThanTenant: an index condition on a column after tenant_id,
// the rule for an index whose columns are not known (an expression).
var narrowerThanTenant = regexp.MustCompile(`\((id|seq|next_attempt_at|account_id|consumer_name|name|lease_id|outbox_id|xid|ready_xid|delivery_id)\b`)

// indexColumns are the key columns of every index of schema mio, in order
// ("" for an expression), by index name.
func indexColumns(t *testing.T, pool interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) map[string][]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT c.relname::text, array_agg(coalesce(a.attname::text, '') ORDER BY k.ord)
		FROM pg_index AS i
		JOIN pg_class AS c ON c.oid = i.indexrelid
		JOIN pg_namespace AS n ON n.oid = c.relnamespace AND n.nspname = 'mio'
		CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
		LEFT JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE k.ord <= i.indnkeyatts
		GROUP BY c.relname`)
	require.NoError(t, err)
	out := map[string][]string{}
	for rows.Next() {
		var name string
		var cols []string
		require.NoError(t, rows.Scan(&name, &cols))
		out[name] = cols
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, out)
	return out
}

// bounds: cond (an Index Cond) constrains column col.
func bounds(cond, col string) bool {
	return regexp.MustCompile(`\(` + regexp.QuoteMeta(col) + ` (=|<|>|<=|>=) `).MatchString(cond)
}

// narrowIndexCond: cond reaches fewer rows than the tenant's in an index
// of columns cols: it bounds the index's first column and, when that is
// tenant_id, its second too (a condition on a later column alone scans
// the whole range before it).
func narrowIndexCond(cond string, cols []string) bool {
	if len(cols) == 0 || slices.Contains(cols, "") {
		return narrowerThanTenant.MatchString(cond)
	}
	if !bounds(cond, cols[0]) {
		return false
	}
	return cols[0] != "tenant_id" || len(cols) == 1 || bounds(cond, cols[1])
}

// faults lists what is wrong with a plan: a sequential or bitmap scan of
// a watched table (but a sequential scan of a partition in empty, one
// that holds no row: the ring's partitions of other generations), an index scan of one whose condition
// does not bound the index's leading columns past the tenant, a hash
// or merge join, a sort of a watched table's scan (where an index gives
// the order). A sort of what a statement returns (the rows it claimed) is
// not one.
func (n *planNode) faults(empty map[string]bool, indexes map[string][]string) []string {
	var out []string
	var walk func(n *planNode)
	walk = func(n *planNode) {
		for i := range n.Plans {
			walk(&n.Plans[i])
		}
		if watched(n.Relation) {
			switch n.Type {
			case "Seq Scan", "Bitmap Heap Scan", "Sample Scan":
				if n.Type == "Seq Scan" && empty[n.Relation] {
					break
				}
				out = append(out, fmt.Sprintf("%s on %s (cost %.2f, %.0f rows)", n.Type, n.Relation, n.Cost, n.Rows))
			case "Index Scan", "Index Only Scan":
				if !narrowIndexCond(n.IndexCond, indexes[n.Index]) {
					out = append(out, fmt.Sprintf("%s using %s (%s) not narrower than the tenant (%s)", n.Type, n.Index,
						strings.Join(indexes[n.Index], ", "), n.IndexCond))
				}
			}
		}
		switch n.Type {
		case "Hash Join", "Merge Join":
			out = append(out, n.Type)
		case "Sort", "Incremental Sort":
			for _, c := range n.Plans {
				for c.Type == "Result" && len(c.Plans) == 1 {
					c = c.Plans[0]
				}
				if watched(c.Relation) && strings.HasSuffix(c.Type, "Scan") {
					out = append(out, fmt.Sprintf("%s of a scan of %s", n.Type, c.Relation))
				}
			}
		}
	}
	walk(n)
	return out
}

// tree is the plan as indented lines: each node's type, relation, index,
// index condition, estimated cost and rows.
func (n *planNode) tree(depth int) string {
	s := fmt.Sprintf("\t%s%s", strings.Repeat("  ", depth), n.Type)
	if n.Relation != "" {
		s += " on " + n.Relation
	}
	if n.Index != "" {
		s += " using " + n.Index
	}
	if n.IndexCond != "" {
		s += " (" + n.IndexCond + ")"
	}
	s += fmt.Sprintf(" cost %.2f, %.0f rows\n", n.Cost, n.Rows)
	for i := range n.Plans {
		s += n.Plans[i].tree(depth + 1)
	}
	return s
}

// run runs sql (a count) in a transaction it rolls back, with the
// session's plan_cache_mode set to mode, and returns the plans of what it
// ran and the count.
func (s *planSession) run(mode, tenant, sql string, args ...any) ([]explained, int64) {
	s.t.Helper()
	ctx := context.Background()
	tx, err := s.conn.Begin(ctx)
	require.NoError(s.t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `SELECT set_config('app.current_tenant_id', $1, true), set_config('plan_cache_mode', $2, true)`, tenant, mode)
	require.NoError(s.t, err)
	s.plans = s.plans[:0]
	var n int64
	require.NoError(s.t, tx.QueryRow(ctx, sql, args...).Scan(&n), sql)
	var out []explained
	for _, p := range s.plans {
		var e explained
		require.NoError(s.t, json.Unmarshal([]byte(p), &e), p)
		if strings.Contains(e.Query, "set_config") {
			continue
		}
		out = append(out, e)
	}
	return out, n
}

// planCheck runs calls (each in a transaction rolled back) under every
// plan cache mode — custom plans, the generic plans the session has
// cached, and plpgsql's own choice after its five custom plans — and
// reports every fault of every statement's plan, with where it was.
type planCheck struct {
	s        *planSession
	faults   []string
	unjudged int
	// empty: the partitions that hold no row in this phase.
	empty map[string]bool
	// indexes: indexColumns.
	indexes map[string][]string
}

type planCall struct {
	name   string
	tenant string
	sql    string
	args   []any
}

func (c *planCheck) check(phase string, calls []planCall) { c.run(phase, calls, true) }

// warmUp runs calls as check does without judging their plans: on an
// empty or one-page outbox a plan made for the call may read the page
// (PostgreSQL's cheapest plan there); what must not happen is that such a
// plan outlives the call, which the checks of the later phases catch (the
// session keeps every plan it cached, and nothing invalidates them).
func (c *planCheck) warmUp(phase string, calls []planCall) {
	c.run(phase, calls, false)
	c.s.t.Logf("%s: %d faults in plans made for a one-page outbox (not judged)", phase, c.unjudged)
	c.unjudged = 0
}

func (c *planCheck) run(phase string, calls []planCall, judge bool) {
	for _, mode := range []string{"force_custom_plan", "auto", "force_generic_plan"} {
		reps := 1
		if mode == "auto" {
			reps = 6
		}
		for _, call := range calls {
			var plans []explained
			var n int64
			for range reps {
				plans, n = c.s.run(mode, call.tenant, call.sql, call.args...)
			}
			if judge && n == 0 {
				c.faults = append(c.faults, fmt.Sprintf("%s, %s, %s: claimed nothing", phase, mode, call.name))
			}
			for _, e := range plans {
				for _, f := range e.Plan.faults(c.empty, c.indexes) {
					if !judge {
						c.unjudged++
						continue
					}
					q := strings.Join(strings.Fields(e.Query), " ")
					c.faults = append(c.faults, fmt.Sprintf("%s, %s, %s: %s\n\t%.300s\n%s", phase, mode, call.name, f, q, e.Plan.tree(1)))
				}
			}
		}
	}
}

// outboxFixture writes outbox rows as the owner.
type outboxFixture struct {
	t     *testing.T
	owner interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
		QueryRow(context.Context, string, ...any) pgx.Row
	}
}

func (f outboxFixture) exec(sql string, args ...any) {
	f.t.Helper()
	_, err := f.owner.Exec(context.Background(), sql, args...)
	require.NoError(f.t, err, sql)
}

// rows inserts n rows of tenant and account in state, in conversations
// conv0..conv(convs-1) in turn, and returns their ids.
func (f outboxFixture) rows(tenant, account uuid.UUID, conv string, n, convs int, state string) []string {
	f.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	f.exec(`INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key,
			request_sha256, handoff_state, text)
		SELECT $1, u.id, $2, 'webhook', $3 || (u.n % $5), u.id::text, '\x00'::bytea, $4, 'x'
		FROM unnest($6::uuid[]) WITH ORDINALITY AS u(id, n)`, tenant, account, conv, state, convs, ids)
	return ids
}

// pages is the outbox heap's size in pages.
func (f outboxFixture) pages() int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.owner.QueryRow(context.Background(),
		`SELECT pg_relation_size('mio.outbox') / current_setting('block_size')::int`).Scan(&n))
	return n
}

// history gives each of the conversations n handed-off messages.
func (f outboxFixture) history(tenant, account uuid.UUID, n int, convs ...string) {
	f.t.Helper()
	for _, conv := range convs {
		f.exec(`INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key,
				request_sha256, handoff_state, text)
			SELECT $1, u.id, $2, 'webhook', $3, u.id::text, '\x00'::bytea, 'handed_off', 'x'
			FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $4)) AS u`, tenant, account, conv, n)
	}
}

func (f outboxFixture) lane(tenant, account uuid.UUID, conv string, n int) []string {
	f.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
		f.exec(`INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key,
				request_sha256, text)
			VALUES ($1, $2::uuid, $3, 'webhook', $4, $2::text, '\x00'::bytea, 'x')`, tenant, ids[i], account, conv)
	}
	return ids
}

// TestDispatchPlans: every statement of the dispatcher's functions
// reaches the outbox by the primary key's order, outbox_lane's order,
// outbox_due's range or TIDs — no sequential or bitmap scan of the outbox,
// no index scan bounded by the tenant alone, no hash or merge join, no
// sort of a scan of the outbox — with custom plans, with the generic plans
// the session caches and after plpgsql's five custom plans, on a large
// outbox (50,000 rows, nearly all terminal, conversations with history)
// before and after ANALYZE and for a tenant new to its statistics (3,000
// rows estimated at one). The session first runs every statement on an
// empty and on a one-page outbox (before and after ANALYZE), where the
// cheapest plan may read the page, and keeps whatever it cached then:
// autovacuum is off for the table, so only the test's VACUUM and
// ANALYZE invalidate a plan, and a plan made on the small outbox that
// survived into the large one fails the phases after. The functions run
// as the service runs them (the runtime role, row-level security), each
// call rolled back.
//
// The plans' margins are a few cost units. PostgreSQL first plans the
// large outbox with the rows per page the tiny one was analyzed at,
// times the pages it has grown to, and a young outbox's rows lie among
// the dead versions its claims and finishes left: analyzed over two to
// four pages, such statistics make a bitmap scan of outbox_conversation
// and a sort look cheaper than outbox_lane for the lane check, unless the
// functions' settings rule it out. And operators change the costs. So
// every phase runs for a tiny outbox analyzed over one to four pages,
// under PostgreSQL's default costs and under the costs operators set for
// SSDs and for a small cache.
func TestDispatchPlans(t *testing.T) {
	t.Parallel()
	for _, p := range planCostProfiles {
		for _, pages := range []int{1, 2, 3, 4} {
			t.Run(fmt.Sprintf("%s, tiny outbox over %d page(s)", p.name, pages), func(t *testing.T) {
				t.Parallel()
				testDispatchPlans(t, pages, p.settings...)
			})
		}
	}
}

// planCostProfiles are the cost settings the plan tests run under:
// PostgreSQL's defaults, an SSD's (random pages as cheap as sequential
// ones, nearly), and a small cache (index pages rarely cached).
var planCostProfiles = []struct {
	name     string
	settings []string
}{
	{"default costs", nil},
	{"ssd", []string{"random_page_cost = 1.1"}},
	{"small cache", []string{"effective_cache_size = '32MB'"}},
}

// testDispatchPlans runs the phases under settings, the tiny outbox
// analyzed over tinyPages pages: its rows on the first, the others
// holding only dead rows.
func testDispatchPlans(t *testing.T, tinyPages int, settings ...string) {
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)
	f := outboxFixture{t: t, owner: owner}
	s := newPlanSession(t, b.env, settings...)
	c := &planCheck{s: s, indexes: indexColumns(t, owner)}
	tenant := b.tenant.String()

	// calls are one round of the dispatcher's statements: the rate-limited
	// claim's steps on two rows, the claim and finish of two, the lane's
	// hand-on (its first row finished, the next claimed, the rest adopted),
	// the extras.
	var limited, claims, lane []string
	calls := func() []planCall {
		return []planCall{
			{"dispatch_candidates, mark_sending, probe", tenant, `
				WITH c AS MATERIALIZED (SELECT * FROM mio.dispatch_candidates($1, $2::uuid[])),
				     m AS MATERIALIZED (SELECT * FROM mio.dispatch_mark_sending($1, ARRAY(SELECT id FROM c),
				         array_fill('sending'::text, ARRAY[2]), array_fill(1, ARRAY[2]), 30))
				SELECT count(*) FROM m, LATERAL mio.dispatch_probe($1, $2::uuid[]) AS p`,
				[]any{tenant, limited}},
			{"dispatch_claim, dispatch_finish", tenant, `
				WITH c AS MATERIALIZED (SELECT * FROM mio.dispatch_claim($1, $2::uuid[], 30))
				SELECT count(*) FROM mio.dispatch_finish($1, ARRAY(SELECT id FROM c), array_fill(1, ARRAY[2]),
				    array_fill('handed_off'::text, ARRAY[2]), array_fill(''::text, ARRAY[2]), array_fill(''::text, ARRAY[2]),
				    array_fill(0::bigint, ARRAY[2]), array_fill(0::bigint, ARRAY[2]), array_fill('{}'::text, ARRAY[2]),
				    array_fill(true, ARRAY[2]))`,
				[]any{tenant, claims}},
			{"dispatch_claim_next", tenant, `
				WITH c AS MATERIALIZED (SELECT * FROM mio.dispatch_claim($1, ARRAY[$2::uuid], 30)),
				     d AS MATERIALIZED (SELECT * FROM mio.dispatch_finish($1, ARRAY(SELECT id FROM c), '{1}', '{handed_off}',
				         '{""}', '{""}', '{0}', '{0}', '{"{}"}', '{true}'))
				SELECT count(*) FROM d, LATERAL mio.dispatch_claim_next($1, '{7}', ARRAY[$3::uuid], '{lane}', '{true}',
				    '{true}', '{webhook}', 30)`,
				[]any{tenant, first(lane), b.account.String()}},
			{"dispatch_claim_extras", tenant,
				`SELECT count(*) FROM mio.dispatch_claim_extras($1, '{8,9}', '{2,2}', '{webhook}', 30)`,
				[]any{tenant}},
		}
	}

	// Nothing but the test analyzes the outbox or invalidates the plans
	// the session caches.
	f.exec(`ALTER TABLE mio.outbox SET (autovacuum_enabled = false)`)

	// Empty, never analyzed.
	limited, claims, lane = []string{uuid.NewString(), uuid.NewString()}, []string{uuid.NewString(), uuid.NewString()}, nil
	c.warmUp("empty", calls())

	// Tiny: ten rows, then analyzed.
	limited = f.rows(b.tenant, b.account, "limited", 2, 2, "queued")
	claims = f.rows(b.tenant, b.account, "claim", 2, 2, "queued")
	lane = f.lane(b.tenant, b.account, "lane", 4)
	f.history(b.tenant, b.account, 1, "limited0", "limited1", "claim0", "claim1")
	c.warmUp("tiny", calls())
	f.exec(`VACUUM mio.outbox`) // the warm-up's dead versions: the rows on one page
	for f.pages() < tinyPages {
		f.rows(b.tenant, b.account, "dead", 4, 1, "handed_off")
	}
	f.exec(`DELETE FROM mio.outbox WHERE conversation_id = 'dead0'`)
	f.exec(`ANALYZE mio.outbox`)
	var analyzed int
	require.NoError(t, owner.QueryRow(ctx, `SELECT relpages FROM pg_class WHERE oid = 'mio.outbox'::regclass`).Scan(&analyzed))
	require.Equal(t, tinyPages, analyzed, "the tiny outbox's pages when analyzed")
	c.warmUp("tiny, analyzed", calls())

	// Large and skewed: 50,000 rows, nearly all terminal, then analyzed;
	// then a tenant new to the statistics.
	f.history(b.tenant, b.account, 200, "limited0", "limited1", "claim0", "claim1", "lane")
	f.rows(b.tenant, b.account, "old", 48000, 1000, "handed_off")
	f.rows(b.tenant, b.account, "queued", 1000, 1000, "queued")
	c.check("large, not analyzed", calls())
	f.exec(`ANALYZE mio.outbox`)
	c.check("large, analyzed", calls())

	// A tenant new to the statistics: estimated at a row, it has 3,000.
	late, err := db.TenantInsert(ctx, b.env.Pool, uuid.Nil, "late")
	require.NoError(t, err)
	var lateAccount uuid.UUID
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, late.ID, func(tx pgx.Tx) error {
		a, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: late.ID, ChannelType: "webhook", DisplayName: "late"})
		lateAccount = a.ID
		return err
	}))
	tenant = late.ID.String()
	b.account = lateAccount
	limited = f.rows(late.ID, lateAccount, "limited", 2, 2, "queued")
	claims = f.rows(late.ID, lateAccount, "claim", 2, 2, "queued")
	lane = f.lane(late.ID, lateAccount, "lane", 4)
	f.rows(late.ID, lateAccount, "burst", 3000, 3000, "queued")
	c.check("a tenant new to the statistics", calls())

	require.Empty(t, c.faults, "\n"+strings.Join(c.faults, "\n"))
}

func first(ids []string) string {
	if len(ids) == 0 {
		return uuid.NewString()
	}
	return ids[0]
}

// TestDispatchBuffers logs the buffers (shared hit and read, from EXPLAIN
// (ANALYZE, BUFFERS), functions' own statements included) each of the
// dispatcher's functions touches per call on a 50,000-row outbox, warm,
// as the runtime role: counts that do not depend on the machine's load,
// to compare definitions with (go test -v -run TestDispatchBuffers). It
// asserts only that the calls claim what they are given.
func TestDispatchBuffers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	f := outboxFixture{t: t, owner: b.env.OwnerPool(t)}
	limited := f.rows(b.tenant, b.account, "limited", 2, 2, "queued")
	claims := f.rows(b.tenant, b.account, "claim", 2, 2, "queued")
	lane := f.lane(b.tenant, b.account, "lane", 4)
	f.history(b.tenant, b.account, 200, "limited0", "limited1", "claim0", "claim1", "lane")
	f.rows(b.tenant, b.account, "old", 48000, 1000, "handed_off")
	f.rows(b.tenant, b.account, "queued", 1000, 1000, "queued")
	f.exec(`ANALYZE mio.outbox`)
	tenant := b.tenant.String()

	// explain runs sql in tx under EXPLAIN and returns its rows and
	// buffers.
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
	// One session, as a dispatcher's pooled connection: plpgsql caches
	// plans per session, and chooses between custom and generic plans
	// after five calls.
	conn, err := b.env.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	round := func(log bool) {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck
		_, err = tx.Exec(ctx, `SELECT set_config('app.current_tenant_id', $1, true)`, tenant)
		require.NoError(t, err)
		for _, call := range []struct {
			name string
			sql  string
			args []any
			want int64
		}{
			{"dispatch_claim of 2", `SELECT * FROM mio.dispatch_claim($1, $2::uuid[], 30)`, []any{tenant, claims}, 2},
			{"dispatch_finish of 2", `SELECT * FROM mio.dispatch_finish($1, $2::uuid[], '{1,1}', '{handed_off,handed_off}',
				'{"",""}', '{"",""}', '{0,0}', '{0,0}', '{"{}","{}"}', '{true,true}')`, []any{tenant, claims}, 2},
			{"dispatch_candidates of 2", `SELECT * FROM mio.dispatch_candidates($1, $2::uuid[])`, []any{tenant, limited}, 2},
			{"dispatch_mark_sending of 2", `SELECT * FROM mio.dispatch_mark_sending($1, $2::uuid[], '{sending,sending}', '{1,1}', 30)`,
				[]any{tenant, limited}, 2},
			{"dispatch_probe of 2", `SELECT * FROM mio.dispatch_probe($1, $2::uuid[])`, []any{tenant, limited}, 2},
			{"dispatch_claim of a lane's first", `SELECT * FROM mio.dispatch_claim($1, ARRAY[$2::uuid], 30)`, []any{tenant, lane[0]}, 1},
			{"dispatch_finish of it", `SELECT * FROM mio.dispatch_finish($1, ARRAY[$2::uuid], '{1}', '{handed_off}', '{""}', '{""}',
				'{0}', '{0}', '{"{}"}', '{true}')`, []any{tenant, lane[0]}, 1},
			{"dispatch_claim_next (claims 1, adopts 2)", `SELECT * FROM mio.dispatch_claim_next($1, '{7}', ARRAY[$2::uuid], '{lane}',
				'{true}', '{true}', '{webhook}', 30)`, []any{tenant, b.account.String()}, 1},
			{"dispatch_claim_extras of 4", `SELECT * FROM mio.dispatch_claim_extras($1, '{8,9}', '{2,2}', '{webhook}', 30)`,
				[]any{tenant}, 4},
		} {
			rows, hit, read := explain(tx, call.sql, call.args...)
			require.Equal(t, call.want, rows, call.name)
			if log {
				t.Logf("%-42s shared hit %5d, read %4d", call.name, hit, read)
			}
		}
	}
	for range 10 {
		round(false)
	}
	round(true)
}

// TestNarrowIndexCond: the plan checks' rule for an index scan, on the
// outbox's indexes: the condition must bound the leading columns past the
// tenant; a bound on a later column alone (the id within
// outbox_conversation, which leads with the account) is a scan of the
// whole index.
func TestNarrowIndexCond(t *testing.T) {
	t.Parallel()
	pkey := []string{"tenant_id", "id"}
	conversation := []string{"account_id", "conversation_id", "created_at", "id"}
	lane := []string{"tenant_id", "account_id", "conversation_id", "seq"}
	for _, c := range []struct {
		cond string
		cols []string
		want bool
	}{
		{"((tenant_id = $1) AND (id >= i.id))", pkey, true},
		{"(tenant_id = $1)", pkey, false},
		{"(id >= i.id)", conversation, false},
		{"((account_id = o.account_id) AND (conversation_id = o.conversation_id))", conversation, true},
		{"((tenant_id = $1) AND (account_id = o.account_id) AND (conversation_id = o.conversation_id) AND (seq < o.seq))", lane, true},
		{"((tenant_id = $1) AND (seq < o.seq))", lane, false},
		{"(id >= i.id)", []string{"tenant_id", ""}, true}, // an expression index: the column-name rule
	} {
		require.Equal(t, c.want, narrowIndexCond(c.cond, c.cols), "%s on (%s)", c.cond, strings.Join(c.cols, ", "))
	}
}
