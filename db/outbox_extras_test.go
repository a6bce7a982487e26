package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
)

// TestClaimExtrasWalkIsBounded: mio.dispatch_claim_extras
// (migrations/functions/dispatch_claim_extras.sql) looks for rows first of
// their lane among the newest due rows only to a bounded depth (4 per row
// asked for, at least 256, counted in rows even when they share their due
// time), so a backlog of lane-blocked rows is not walked to its end in
// every shared finish-and-claim transaction. Three lanes of 100 queued
// rows each, the lanes' first rows the oldest: asked for one extra, the
// walk meets only blocked rows within its depth and takes nothing (an
// unbounded walk goes on to the lanes' first rows and takes one); with a
// backlog inside the depth it takes a lane's first row.
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

// TestClaimExtrasWalkCountsRows: the walk's depth is counted in rows even
// when the rows share their due time, as the rows of one transaction do.
// A bound on the due time found at that depth bounds nothing then: every
// call would walk the whole backlog. 3,000 due rows sharing one due time,
// none takeable (their channel takes rate-limit tokens): the walk reads at
// most its depth of the due index, counted by the transaction's own index
// statistics (a walk bounded by due time reads all 3,000 and fails this).
func TestClaimExtrasWalkCountsRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)
	_, err := owner.Exec(ctx, `
		WITH jobs AS (
			INSERT INTO river.river_job (args, kind, max_attempts, queue, state, attempted_at, metadata)
			SELECT '{}', 'mio.test', 25, 'test', 'running', now(), jsonb_build_object('n', n)
			FROM generate_series(1, 3000) AS n
			RETURNING id, (metadata->>'n')::int AS n
		)
		INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key,
		                        request_sha256, next_attempt_at, job_id)
		SELECT $1, gen_random_uuid(), $2, 'slack', 'same-' || jobs.n, 'same-' || jobs.n, '\x00'::bytea,
		       now() - interval '1 hour', jobs.id
		FROM jobs`, b.tenant, b.account)
	require.NoError(t, err)
	tx, err := owner.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `SELECT set_config('app.current_tenant_id', $1, true)`, b.tenant.String())
	require.NoError(t, err)
	var taken int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM mio.dispatch_claim_extras($1, '{1}', '{1}', '{webhook}', 60)`, b.tenant).Scan(&taken))
	require.Zero(t, taken)
	var read int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_returned('mio.outbox_due'::regclass)`).Scan(&read))
	require.Positive(t, read, "the walk reads the due index")
	require.LessOrEqual(t, read, int64(300), "the walk read %d index entries of 3,000 due rows: its depth is 256", read)
	var seqRead int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_returned('mio.outbox'::regclass)`).Scan(&seqRead))
	require.Zero(t, seqRead, "the walk's rows are joined back by row version, not by a scan of the outbox")
}

// TestTakeOversNameTheJobsLeft: the extras walk and a lane's hand-on take
// rows over without touching River's tables: every job still exists, and
// each taken row's former job is returned (ExtraClaim.PriorJobID,
// LaneNextResult.PriorJobIDs) for the dispatcher to delete through
// River's client, which keeps a group's job (workers,
// TestTakenOverJobsDeletedThroughRiver). The drain is recorded as the job
// of the rows behind, grouped or not.
func TestTakeOversNameTheJobsLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)
	// job inserts an available dispatch job for rows (the first in
	// outbox_id, the others in more) and records it on them.
	job := func(rows ...uuid.UUID) int64 {
		t.Helper()
		more := make([]string, 0, len(rows)-1)
		for _, r := range rows[1:] {
			more = append(more, r.String())
		}
		args := map[string]any{"tenant_id": b.tenant, "outbox_id": rows[0]}
		if len(more) > 0 {
			args["more"] = strings.Join(more, ",") // jobs.IDList's form
		}
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		var id int64
		require.NoError(t, owner.QueryRow(ctx, `INSERT INTO river.river_job (args, kind, max_attempts, queue, state, scheduled_at)
			VALUES ($1, 'mio.dispatch', 25, 'test', 'available', now() + interval '1 hour') RETURNING id`, raw).Scan(&id))
		_, err = owner.Exec(ctx, `UPDATE mio.outbox SET job_id = $1 WHERE id = ANY ($2)`, id, rows)
		require.NoError(t, err)
		return id
	}
	jobs := func() int {
		var n int
		require.NoError(t, owner.QueryRow(ctx, `SELECT count(*) FROM river.river_job`).Scan(&n))
		return n
	}

	// Extras: three rows first of their lanes; two share a group job, one
	// has its own. All three are taken for job 1.
	g1, g2, single := b.insert(t, "g1", "ex-a"), b.insert(t, "g2", "ex-b"), b.insert(t, "s", "ex-c")
	group, own := job(g1, g2), job(single)
	_, _, got, err := db.OutboxFinishAndClaimCommit(ctx, b.env.Pool, b.tenant, nil, nil, time.Minute,
		&db.ExtrasRequest{JobIDs: []int64{1}, Counts: []int32{3}, Unlimited: []string{"webhook"}}, nil)
	require.NoError(t, err)
	require.Len(t, got, 3)
	prior := map[uuid.UUID]int64{}
	for _, e := range got {
		require.Equal(t, int64(1), e.JobID)
		prior[e.Candidate.ID] = e.PriorJobID
	}
	require.Equal(t, map[uuid.UUID]int64{g1: group, g2: group, single: own}, prior)
	require.Equal(t, 2, jobs(), "River's table is not written")

	// A lane's hand-on: the finished row's lane holds a row of a group
	// (whose other row is in another lane) and, behind it, a row with a
	// job of its own and a row of another group. Job 7 claims the first
	// and adopts the two behind, naming the three jobs they leave.
	_, err = owner.Exec(ctx, `UPDATE mio.outbox SET handoff_state = 'handed_off' WHERE tenant_id = $1`, b.tenant)
	require.NoError(t, err)
	head, elsewhere, behind := b.insert(t, "head", "lane"), b.insert(t, "elsewhere", "other"), b.insert(t, "behind", "lane")
	behindGrouped, elsewhere2 := b.insert(t, "behind-grouped", "lane"), b.insert(t, "elsewhere-2", "other-2")
	group, own = job(head, elsewhere), job(behind)
	group2 := job(behindGrouped, elsewhere2)
	lanes := &db.LaneNextRequest{Unlimited: []string{"webhook"},
		Lanes: []db.LaneNext{{JobID: 7, AccountID: b.account, ConversationID: "lane", Claim: true, Adopt: true}}}
	_, _, _, err = db.OutboxFinishAndClaimCommit(ctx, b.env.Pool, b.tenant, nil, nil, time.Minute, nil, lanes)
	require.NoError(t, err)
	require.Len(t, lanes.Results, 1)
	require.True(t, lanes.Results[0].Claimed)
	require.Equal(t, head, lanes.Results[0].Candidate.ID)
	require.ElementsMatch(t, []int64{group, own, group2}, lanes.Results[0].PriorJobIDs)
	require.Equal(t, 5, jobs(), "River's table is not written")
	var headJob, behindJob, behindGroupedJob, elsewhereJob int64
	require.NoError(t, owner.QueryRow(ctx, `SELECT
		(SELECT job_id FROM mio.outbox WHERE id = $1), (SELECT job_id FROM mio.outbox WHERE id = $2),
		(SELECT job_id FROM mio.outbox WHERE id = $3), (SELECT job_id FROM mio.outbox WHERE id = $4)`,
		head, behind, behindGrouped, elsewhere).Scan(&headJob, &behindJob, &behindGroupedJob, &elsewhereJob))
	require.Equal(t, [4]int64{7, 7, 7, group}, [4]int64{headJob, behindJob, behindGroupedJob, elsewhereJob},
		"the drain is recorded as the job of the rows behind, grouped or not")
}
