package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/workers"
)

func (b *outBundle) jobOf(t *testing.T, id uuid.UUID) int64 {
	t.Helper()
	var jobID int64
	require.NoError(t, b.owner.QueryRow(context.Background(), `SELECT job_id FROM mio.outbox WHERE id = $1`, id).Scan(&jobID))
	return jobID
}

// TestRescuerResumesKilledSend: a worker fetched a dispatch job, claimed
// its row and was killed mid-send — the job stays running in River under
// the dead process, the row sending. River's rescuer takes the job back
// (workers.Config.RescueStuckJobsAfter, the job's Timeout) and its retry
// resumes the send as the same attempt, with the same idempotency key. No
// sweeper runs: nothing else would dispatch the row (with River's default
// of an hour before a rescue the row stays sending).
func TestRescuerResumesKilledSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := outOpts{noStart: true, dispatch: workers.DispatchConfig{Lease: 300 * time.Millisecond}}
	b := newOutBundle(t, o)
	id := b.send(t, "webhook", "killed-1", "after the kill", nil)
	require.NoError(t, b.disps[0].ClaimOnly(ctx, b.tenant, id))
	b.ownerExec(t, `UPDATE river.river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '5 minutes',
		attempted_by = '{killed-worker}' WHERE id = $1`, b.jobOf(t, id))

	b.clients = append(b.clients, b.newClient(t, o, true)) // a live process: River's leader
	b.waitTerminal(t, []uuid.UUID{id}, 30*time.Second)
	got, ev := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, got.HandoffState)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, []string{"queued:queued@1", "sending:sending@1", "resumed:sending@1",
		"handed_off:handed_off@1", "accepted:accepted@1"}, timeline(ev))
	calls := b.fake.Calls()
	require.Len(t, calls, 1)
	require.Equal(t, fmt.Sprintf("mio-%s", id), calls[0].Key, "same series, same webhook-id")
}

// TestTakenOverJobsDeletedThroughRiver: the jobs of rows another job took
// over are deleted through River's client (JobDeleteMany), except a
// group's job, which stands for its other rows, and a job River is
// running, which finds its row taken.
func TestTakenOverJobsDeletedThroughRiver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutBundle(t, outOpts{noStart: true})
	client := b.clients[0]
	insert := func(args jobs.DispatchArgs) int64 {
		res, err := client.Insert(ctx, args, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		return res.Job.ID
	}
	single := insert(jobs.DispatchArgs{TenantID: b.tenant, OutboxID: uuid.New()})
	group := insert(jobs.DispatchArgs{TenantID: b.tenant, OutboxID: uuid.New(), More: jobs.IDList{uuid.New()}})
	running := insert(jobs.DispatchArgs{TenantID: b.tenant, OutboxID: uuid.New()})
	b.ownerExec(t, `UPDATE river.river_job SET state = 'running', attempted_at = now() WHERE id = $1`, running)

	b.disps[0].DeleteTakenJobs(ctx, client, []int64{single, group, running, single})
	res, err := client.JobList(ctx, river.NewJobListParams().IDs(single, group, running))
	require.NoError(t, err)
	left := map[int64]rivertype.JobState{}
	for _, j := range res.Jobs {
		left[j.ID] = j.State
	}
	require.Equal(t, map[int64]rivertype.JobState{group: rivertype.JobStateScheduled, running: rivertype.JobStateRunning}, left)
}

// TestExtrasDeleteTheirJobs: a dispatch job that takes rows over as extras
// leaves none of their jobs to River: the rows are sent once, and the
// jobs they had are gone (deleted through River's client) instead of
// running to find their rows taken.
func TestExtrasDeleteTheirJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutBundle(t, outOpts{noStart: true})
	var ids []uuid.UUID
	for i := range 5 {
		ids = append(ids, b.send(t, "webhook", fmt.Sprintf("extra-%d", i), "one of five", nil))
	}
	jobIDs := make([]int64, len(ids))
	for i, id := range ids {
		jobIDs[i] = b.jobOf(t, id)
	}
	// The newest rows' jobs wait an hour: only an extras claim sends them.
	b.ownerExec(t, `UPDATE river.river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour' WHERE id = ANY ($1)`, jobIDs[1:])

	b.clients = append(b.clients, b.newClient(t, outOpts{}, true))
	b.waitTerminal(t, ids, 20*time.Second)
	require.Len(t, b.fake.Calls(), len(ids), "each sent once")
	require.Eventually(t, func() bool {
		res, err := b.clients[1].JobList(ctx, river.NewJobListParams().IDs(jobIDs[1:]...))
		return err == nil && len(res.Jobs) == 0
	}, 5*time.Second, 20*time.Millisecond, "the taken rows' jobs are deleted")
	var n int
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(DISTINCT job_id) FROM mio.outbox WHERE id = ANY ($1)`, ids).Scan(&n)
	}))
	require.Equal(t, 1, n, "the first row's job took the others")
}
