package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
)

// TestClaimExtrasWalkIsBounded: mio.dispatch_claim_extras (migration
// 00029) looks for rows first of their lane among the newest due rows only
// to a bounded depth (4 per row asked for, at least 256), so a backlog of
// lane-blocked rows is not walked to its end in every shared
// finish-and-claim transaction. Three lanes of 100 queued rows each, the
// lanes' first rows the oldest: asked for one extra, the walk meets only
// blocked rows within its depth and takes nothing (00004's walk went on
// to the lanes' first rows and took one); with a backlog inside the depth
// it takes a lane's first row.
func TestClaimExtrasWalkIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)
	fill := func(prefix string, lanes, perLane int) {
		for i := 0; i < perLane; i++ {
			for l := 0; l < lanes; l++ {
				b.insert(t, fmt.Sprintf("%s-%d-%d", prefix, l, i), fmt.Sprintf("%s-lane-%d", prefix, l))
			}
		}
		// A job each, available, and due times in seq order: the lanes'
		// first rows are the oldest, the deepest from the newest end.
		_, err := owner.Exec(ctx, `
			WITH rows AS (
				SELECT o.id, row_number() OVER (ORDER BY o.seq) AS n FROM mio.outbox AS o
				WHERE o.tenant_id = $1 AND o.conversation_id LIKE $2 || '-lane-%' AND o.job_id IS NULL
			),
			jobs AS (
				INSERT INTO river.river_job (args, kind, max_attempts, queue, state, scheduled_at, metadata)
				SELECT jsonb_build_object('outbox_id', rows.id), 'mio.test', 25, 'test', 'available', now() + interval '1 hour',
				       jsonb_build_object('n', rows.n)
				FROM rows
				RETURNING id, (metadata->>'n')::bigint AS n
			)
			UPDATE mio.outbox AS o SET job_id = jobs.id, next_attempt_at = now() - interval '1 hour' + rows.n * interval '1 millisecond'
			FROM rows JOIN jobs ON jobs.n = rows.n
			WHERE o.tenant_id = $1 AND o.id = rows.id`, b.tenant, prefix)
		require.NoError(t, err)
	}
	extras := func() []db.ExtraClaim {
		_, _, got, err := db.OutboxFinishAndClaimCommit(ctx, b.env.Pool, b.tenant, nil, nil, time.Minute,
			&db.ExtrasRequest{JobIDs: []int64{1}, Counts: []int32{1}, Unlimited: []string{"webhook"}}, nil)
		require.NoError(t, err)
		return got
	}

	fill("deep", 3, 100)
	require.Empty(t, extras(), "300 lane-blocked rows: the lanes' first rows lie beyond the walk's depth")

	_, err := owner.Exec(ctx, `UPDATE mio.outbox SET handoff_state = 'dead' WHERE tenant_id = $1`, b.tenant)
	require.NoError(t, err)
	fill("near", 3, 10)
	got := extras()
	require.Len(t, got, 1, "30 rows: within the depth, a lane's first row is taken")
	require.Equal(t, int64(1), got[0].JobID)
	var conv string
	var seqFirst bool
	require.NoError(t, owner.QueryRow(ctx, `SELECT o.conversation_id, NOT EXISTS (SELECT 1 FROM mio.outbox AS p
		WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id AND p.conversation_id = o.conversation_id
		  AND p.active AND p.seq < o.seq)
		FROM mio.outbox AS o WHERE o.tenant_id = $1 AND o.id = $2`, b.tenant, got[0].Candidate.ID).Scan(&conv, &seqFirst))
	require.True(t, seqFirst, "the row taken is first of its lane %s", conv)
}
