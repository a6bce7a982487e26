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

// TestPullStateReadsAboveSweep: mio.consumer_pull_state, which every pull
// runs before it claims, reads a consumer's lease ranges and settlements
// above its sweep through the partitions' indexes, never by a sequential
// scan of the ring generation, under the pull's generic plans, on analyzed
// partitions holding thousands of the consumer's settled ranges. It runs
// here under auto_explain with nested statements. This is what the
// function's enable_seqscan = off holds: without it (ALTER FUNCTION … RESET
// ALL) PostgreSQL 15 plans a sequential scan of every range and settle
// partition here, estimating a third of the consumer's rows above a sweep
// it cannot see.
func TestPullStateReadsAboveSweep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "p", client.ConsumerConfig{MaxAckPending: 10000})
	require.NoError(t, err)
	texts := make([]string, 3000)
	for i := range texts {
		texts[i] = fmt.Sprintf("m%d", i)
	}
	b.insert(t, b.tenant, b.account, "conv", texts...)
	// Ranges of 10 messages, acked as they come: the sweep follows them.
	for range len(texts) / 10 {
		got, steady, _, err := db.PullSteady(ctx, b.env.Pool, b.tenant, "p", 10)
		require.NoError(t, err)
		require.True(t, steady)
		ids := make([]uuid.UUID, len(got))
		for i, d := range got {
			ids[i] = d.DeliveryID
		}
		acked, err := db.AckAll(ctx, b.env.Pool, b.tenant, "p", ids)
		require.NoError(t, err)
		require.Len(t, acked, len(ids))
	}
	owner := b.env.OwnerPool(t)
	_, err = owner.Exec(ctx, `ANALYZE mio.consumer_leases_0, mio.consumer_leases_1, mio.consumer_leases_2,
		mio.consumer_settles_0, mio.consumer_settles_1, mio.consumer_settles_2`)
	require.NoError(t, err)

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
		t.Skipf("auto_explain cannot be loaded here: %v", err)
	}
	for _, s := range []string{
		"SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on",
		"SET auto_explain.log_level = notice",
		"SET client_min_messages = notice",
		// As a pull's transaction (db.BeginPull, mio.consumer_pull_steady).
		"SET plan_cache_mode = force_generic_plan",
		"SET enable_bitmapscan = off",
	} {
		_, err := conn.Exec(ctx, s)
		require.NoError(t, err, s)
	}
	for range 2 { // the second call runs the cached plans
		_, err = conn.Exec(ctx, `SELECT * FROM mio.consumer_pull_state($1, 'p')`, b.tenant)
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	scan := regexp.MustCompile(`(Seq|Index|Index Only) Scan.* on consumer_(leases|settles)_\d`)
	seen := 0
	for _, plan := range notices {
		for _, line := range strings.Split(plan, "\n") {
			m := scan.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			seen++
			require.NotEqual(t, "Seq", m[1], "a sequential scan of a ring partition:\n%s", plan)
		}
	}
	require.NotZero(t, seen, "no plan of a range or settle partition among:\n%s", strings.Join(notices, "\n"))
}
