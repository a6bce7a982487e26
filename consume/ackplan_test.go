package consume_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
)

// TestAckReadsRangesByID: mio.consumer_ack — and the
// materialization of range members before a nak, term or extend — finds the
// ranges it settles, and their settlements, by one index equality per
// lease id, not by reading every range of the consumer's ring generation.
// The ring's partitions are truncated as they rotate, so their statistics
// estimate one row per consumer; under the ack's generic plans, an
// `id = ANY (...)` lookup is costed as a filter over the consumer's prefix of
// the index and each ack reads the whole generation (auto_explain: 3,984
// ranges removed by filter in one ack of 100 during mio-bench consume).
// The ack runs here under auto_explain with nested statements, after 300
// one-message ranges, and every scan of a range or settle partition must
// name its id in the index condition and remove nothing by filter.
func TestAckReadsRangesByID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "p", client.ConsumerConfig{MaxAckPending: 10000})
	require.NoError(t, err)
	texts := make([]string, 300)
	for i := range texts {
		texts[i] = fmt.Sprintf("m%d", i)
	}
	b.insert(t, b.tenant, b.account, "conv", texts...)
	for range texts {
		got, steady, _, err := db.PullSteady(ctx, b.env.Pool, b.tenant, "p", 1)
		require.NoError(t, err)
		require.True(t, steady)
		require.Len(t, got, 1)
	}

	cfg, err := pgx.ParseConfig(b.env.OwnerURL)
	require.NoError(t, err)
	var (
		mu      sync.Mutex
		notices []string
	)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LOAD 'auto_explain'"); err != nil {
		// A test server without the contrib module, or a test role that
		// may not load it (MIO_TEST_DATABASE_URL): the plans cannot be seen.
		t.Skipf("auto_explain cannot be loaded here: %v", err)
	}
	for _, s := range []string{
		"SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on",
		"SET auto_explain.log_analyze = on",
		"SET auto_explain.log_level = notice",
		"SET client_min_messages = notice",
	} {
		_, err := conn.Exec(ctx, s)
		require.NoError(t, err, s)
	}
	rows, err := conn.Query(ctx, `SELECT id FROM mio.consumer_leases WHERE tenant_id = $1 AND consumer_name = 'p' ORDER BY id`, b.tenant)
	require.NoError(t, err)
	leases, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, leases, len(texts))

	ack := `SELECT count(*) FROM mio.consumer_ack($1::uuid, 'p', $2::bigint[], $3::int[], '{}'::uuid[])`
	// Two acks in one session: the second runs the cached generic plans.
	for _, l := range [][]int64{leases[10:12], leases[200:203]} {
		mu.Lock()
		notices = nil
		mu.Unlock()
		var n int
		require.NoError(t, conn.QueryRow(ctx, ack, b.tenant, l, make([]int32, len(l))).Scan(&n))
		require.Equal(t, len(l), n, "each range's member 0 was outstanding")
	}

	mu.Lock()
	requireRangeScansByID(t, notices)
	notices = nil
	mu.Unlock()

	// A nak, term or extend first moves the members it names out of their
	// ranges (db.LeaseMaterializeMembers), with the same lookup; here
	// under a forced generic plan, as a pooled session's cached statement
	// can be.
	c, err := db.ConsumerGet(ctx, conn, b.tenant, "p")
	require.NoError(t, err)
	for _, l := range [][]int64{leases[20:22], leases[250:253]} {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "SELECT set_config('app.current_tenant_id', $1, true), set_config('plan_cache_mode', 'force_generic_plan', true)", b.tenant.String())
		require.NoError(t, err)
		ids := make([]uuid.UUID, len(l))
		for i, id := range l {
			ids[i] = db.LeaseDeliveryID(id, 0)
		}
		moved, err := db.LeaseMaterializeMembers(ctx, tx, c, ids)
		require.NoError(t, err)
		require.ElementsMatch(t, ids, moved)
		require.NoError(t, tx.Commit(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	requireRangeScansByID(t, notices)
}

// requireRangeScansByID fails when a plan among auto_explain's notices
// scans a lease-range or settle partition without the range id in its
// index condition, or removes rows by filter there.
func requireRangeScansByID(t *testing.T, notices []string) {
	t.Helper()
	scan := regexp.MustCompile(`Index (Only )?Scan.* on consumer_(leases|settles)_\d+`)
	removed := regexp.MustCompile(`Rows Removed by Filter: [1-9]`)
	checked := 0
	for _, plan := range notices {
		lines := strings.Split(plan, "\n")
		for i, line := range lines {
			if !scan.MatchString(line) || strings.Contains(line, "never executed") {
				continue
			}
			checked++
			var cond string
			for _, next := range lines[i+1:] {
				if strings.Contains(next, "->") {
					break
				}
				if strings.Contains(next, "Index Cond:") {
					cond = next
				}
				require.False(t, removed.MatchString(next), "ranges filtered out of a scan:\n%s", plan)
			}
			require.Regexp(t, `(lease_)?id = `, cond, "ranges scanned without their id:\n%s", plan)
		}
	}
	require.NotZero(t, checked, "no range or settle scan in the plans: %q", notices)
}
