package workers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/workers"
)

// TestWorkerReclaim: a live worker alive for a whole timeout takes back
// the running jobs of workers whose heartbeat expired, as River's rescuer
// would (available at once with an error, discarded once out of
// attempts); it leaves alone the jobs of live workers, of processes
// without a heartbeat row and jobs not running; a worker alive for less
// than the timeout judges nobody. Runs as the runtime role.
func TestWorkerReclaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	owner := env.OwnerPool(t)
	tenant := uuid.New()
	_, err := owner.Exec(ctx, `INSERT INTO mio.worker_heartbeats (client_id, alive_since, expires_at) VALUES
		('judge', now() - interval '1 minute', now() + interval '10 seconds'),
		('young', now(), now() + interval '10 seconds'),
		('live', now() - interval '1 minute', now() + interval '10 seconds'),
		('dead', now() - interval '1 minute', now() - interval '1 second')`)
	require.NoError(t, err)
	job := func(kind, state, by string, attempt, maxAttempts int) int64 {
		var id int64
		require.NoError(t, owner.QueryRow(ctx, `INSERT INTO river.river_job (kind, args, state, attempt, max_attempts, attempted_at, attempted_by, queue)
			VALUES ($1, jsonb_build_object('tenant_id', $2::uuid), $3::river.river_job_state, $4, $5, now(), ARRAY['elsewhere', $6], 'default') RETURNING id`,
			kind, tenant, state, attempt, maxAttempts, by).Scan(&id))
		return id
	}
	deadDispatch := job("mio.dispatch", "running", "dead", 1, 25)
	deadOther := job("mio.enrich", "running", "dead", 2, 25)
	deadLast := job("mio.enrich", "running", "dead", 3, 3)
	live := job("mio.dispatch", "running", "live", 1, 25)
	unknown := job("mio.dispatch", "running", "gone-without-a-row", 1, 25)
	snoozed := job("mio.dispatch", "scheduled", "dead", 1, 25)

	got, err := db.WorkerReclaim(ctx, env.Pool, "young", 10*time.Second, 100)
	require.NoError(t, err)
	require.Empty(t, got, "a worker alive for less than the timeout judged")

	got, err = db.WorkerReclaim(ctx, env.Pool, "judge", 10*time.Second, 100)
	require.NoError(t, err)
	byID := map[int64]db.ReclaimedJob{}
	for _, j := range got {
		byID[j.ID] = j
	}
	require.Len(t, byID, 3)
	require.Equal(t, db.ReclaimedJob{ID: deadDispatch, Kind: "mio.dispatch", TenantID: tenant, DeadClient: "dead"}, byID[deadDispatch])
	require.Equal(t, db.ReclaimedJob{ID: deadOther, Kind: "mio.enrich", DeadClient: "dead"}, byID[deadOther])
	require.Contains(t, byID, deadLast)

	state := func(id int64) (string, int, bool) {
		var s string
		var errs int
		var finalized bool
		require.NoError(t, owner.QueryRow(ctx, `SELECT state::text, coalesce(array_length(errors, 1), 0), finalized_at IS NOT NULL
			FROM river.river_job WHERE id = $1`, id).Scan(&s, &errs, &finalized))
		return s, errs, finalized
	}
	for _, c := range []struct {
		name      string
		id        int64
		state     string
		errs      int
		finalized bool
	}{
		{"dead worker's dispatch job", deadDispatch, "available", 1, false},
		{"dead worker's other job", deadOther, "available", 1, false},
		{"dead worker's job out of attempts", deadLast, "discarded", 1, true},
		{"live worker's job", live, "running", 0, false},
		{"job of a process without a row", unknown, "running", 0, false},
		{"dead worker's job not running", snoozed, "scheduled", 0, false},
	} {
		s, errs, finalized := state(c.id)
		require.Equal(t, c.state, s, c.name)
		require.Equal(t, c.errs, errs, c.name)
		require.Equal(t, c.finalized, finalized, c.name)
	}

	got, err = db.WorkerReclaim(ctx, env.Pool, "judge", 10*time.Second, 100)
	require.NoError(t, err)
	require.Empty(t, got, "reclaimed twice")
}

// TestHeartbeatLostCancelsJobs: a worker that cannot refresh its
// heartbeat cancels its running jobs (ErrHeartbeatLost) before its row
// expires, and snoozes the jobs it is handed meanwhile; before its first
// refresh it runs nothing either.
func TestHeartbeatLostCancelsJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	pool, err := db.Open(ctx, env.PoolURL, db.PoolOptions{MaxConns: 2, RuntimeRole: dbtest.RuntimeRole})
	require.NoError(t, err)
	hb := workers.NewHeartbeat(pool, workers.HeartbeatConfig{Timeout: 6 * time.Second})

	// Before its first refresh a worker runs nothing.
	err = hb.Work(ctx, nil, func(context.Context) error { return nil })
	var snooze *river.JobSnoozeError
	require.ErrorAs(t, err, &snooze)

	require.NoError(t, hb.Start(ctx, "worker-under-test", nil))
	ran := false
	require.NoError(t, hb.Work(ctx, nil, func(context.Context) error { ran = true; return nil }))
	require.True(t, ran)

	// The database goes out of reach for this worker: its running job is
	// cancelled with ErrHeartbeatLost.
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- hb.Work(ctx, nil, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return context.Cause(ctx)
		})
	}()
	<-started
	pool.Close()
	select {
	case err := <-done:
		require.ErrorIs(t, err, workers.ErrHeartbeatLost)
	case <-time.After(time.Minute):
		t.Fatal("the running job was not cancelled when the heartbeat was lost")
	}
	// ... before its row expired: nobody could have reclaimed the job yet.
	var expired bool
	require.NoError(t, env.OwnerPool(t).QueryRow(ctx, `SELECT expires_at < now() FROM mio.worker_heartbeats WHERE client_id = 'worker-under-test'`).Scan(&expired))
	require.False(t, expired, "the job was cancelled only after the worker's row expired")
	err = hb.Work(ctx, nil, func(context.Context) error { return errors.New("ran without a heartbeat") })
	require.ErrorAs(t, err, &snooze)
	hb.Stop()
}

// jobOf returns the dispatch job recorded on outbox row id.
func (b *outBundle) jobOf(t *testing.T, id uuid.UUID) int64 {
	t.Helper()
	var jobID int64
	require.NoError(t, b.owner.QueryRow(context.Background(), `SELECT job_id FROM mio.outbox WHERE id = $1`, id).Scan(&jobID))
	return jobID
}

// heldByKilledWorker makes River job jobID running on worker "killed",
// whose heartbeat expired, beside a live worker "survivor" alive for a
// minute (so it may judge).
func (b *outBundle) heldByKilledWorker(t *testing.T, jobID int64) {
	t.Helper()
	b.ownerExec(t, `UPDATE river.river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['killed'] WHERE id = $1`, jobID)
	b.ownerExec(t, `INSERT INTO mio.worker_heartbeats (client_id, alive_since, expires_at) VALUES
		('killed', now() - interval '1 minute', now() - interval '1 second'),
		('survivor', now() - interval '1 minute', now() + interval '10 seconds')`)
}

// TestHeartbeatReclaimResumesSend: a worker killed mid-send leaves its
// dispatch job running and its rows sending under their lease — the
// job's own row and one it took over (an extra, whose own job was
// deleted when it was taken). Once the worker's heartbeat expired, a live
// worker reclaims the job, ends the leases, and gives the taken-over row
// a job of its own (the job's retry dispatches only its own row): both
// sends resume at once as the same attempt (same key) instead of after
// the lease and the outbox sweeper, which runs only under River's leader.
func TestHeartbeatReclaimResumesSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := outOpts{noStart: true, dispatch: workers.DispatchConfig{Lease: 5 * time.Minute}}
	b := newOutBundle(t, o)
	id := b.send(t, "webhook", "reclaim-1", "taken back", nil)
	extra := b.send(t, "webhook", "reclaim-2", "taken over", nil)
	jobID, extraJob := b.jobOf(t, id), b.jobOf(t, extra)
	require.NoError(t, b.disps[0].ClaimOnly(ctx, b.tenant, id))
	require.NoError(t, b.disps[0].ClaimOnly(ctx, b.tenant, extra))
	b.ownerExec(t, `UPDATE mio.outbox SET job_id = $1 WHERE id = $2`, jobID, extra)
	b.ownerExec(t, `DELETE FROM river.river_job WHERE id = $1`, extraJob)
	b.heldByKilledWorker(t, jobID)

	live := b.newClient(t, o, true) // a live process that works the jobs again
	b.clients = append(b.clients, live)
	hb := workers.NewHeartbeat(b.env.Pool, workers.HeartbeatConfig{Timeout: 2 * time.Second})
	require.NoError(t, hb.Start(ctx, "survivor", live))
	t.Cleanup(hb.Stop)
	b.waitTerminal(t, []uuid.UUID{id, extra}, 20*time.Second)
	for _, row := range []uuid.UUID{id, extra} {
		got, ev := b.get(t, row)
		require.Equal(t, db.HandoffHandedOff, got.HandoffState)
		require.Equal(t, []string{"queued:queued@1", "sending:sending@1", "resumed:sending@1", "handed_off:handed_off@1", "accepted:accepted@1"}, timeline(ev))
	}
	require.NotEqual(t, jobID, b.jobOf(t, extra), "the taken-over row got a job of its own")
	calls := b.fake.Calls()
	require.Len(t, calls, 2)
	keys := []string{calls[0].Key, calls[1].Key}
	require.ElementsMatch(t, []string{fmt.Sprintf("mio-%s", id), fmt.Sprintf("mio-%s", extra)}, keys, "the same series keys")
}

// TestHeartbeatReclaimIsAtomic: a reclaimed dispatch job becomes
// available only together with the end of its send's lease. The hook
// holds the reclaim for 2 s between taking the job back and ending the
// lease: meanwhile nobody sees the job reclaimed, and a live worker that
// polls for jobs all along cannot fetch it early, find the send still
// under the dead worker's 5-minute lease and snooze for the rest of it
// (TestChaos saw that race, 30 s with the default lease). The send is
// handed off within seconds, once.
func TestHeartbeatReclaimIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := outOpts{noStart: true, dispatch: workers.DispatchConfig{Lease: 5 * time.Minute}}
	b := newOutBundle(t, o)
	id := b.send(t, "webhook", "atomic-1", "taken back whole", nil)
	jobID := b.jobOf(t, id)
	require.NoError(t, b.disps[0].ClaimOnly(ctx, b.tenant, id))
	b.heldByKilledWorker(t, jobID)

	live := b.newClient(t, o, true) // polls for jobs during the reclaim
	b.clients = append(b.clients, live)
	hb := workers.NewHeartbeat(b.env.Pool, workers.HeartbeatConfig{Timeout: 2 * time.Second})
	seen := make(chan string, 1)
	hb.SetAfterReclaim(func() {
		var state string
		err := b.owner.QueryRow(ctx, `SELECT state::text FROM river.river_job WHERE id = $1`, jobID).Scan(&state)
		if err != nil {
			state = err.Error()
		}
		select {
		case seen <- state:
		default:
		}
		time.Sleep(2 * time.Second)
	})
	require.NoError(t, hb.Start(ctx, "survivor", live))
	t.Cleanup(hb.Stop)
	select {
	case state := <-seen:
		require.Equal(t, "running", state, "the reclaimed job was visible before its send's lease ended")
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reclaimed")
	}
	b.waitTerminal(t, []uuid.UUID{id}, 8*time.Second)
	got, ev := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, got.HandoffState)
	require.Equal(t, []string{"queued:queued@1", "sending:sending@1", "resumed:sending@1", "handed_off:handed_off@1", "accepted:accepted@1"}, timeline(ev))
	require.Len(t, b.fake.Calls(), 1)
}

// TestWorkerSchedule: while River has no live leader — no leadership
// row, or one whose leader's heartbeat expired — a worker alive for a
// whole timeout makes the due scheduled and retryable jobs available, as
// River's scheduler would; it leaves alone jobs not yet due, jobs with a
// unique key (River's scheduler settles their conflicts) and jobs in
// other states; it does nothing while a leader with a live heartbeat
// holds office, nor while it is young itself. Runs as the runtime role.
func TestWorkerSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	owner := env.OwnerPool(t)
	_, err := owner.Exec(ctx, `INSERT INTO mio.worker_heartbeats (client_id, alive_since, expires_at) VALUES
		('judge', now() - interval '1 minute', now() + interval '10 seconds'),
		('young', now(), now() + interval '10 seconds'),
		('leader', now() - interval '1 minute', now() + interval '10 seconds'),
		('killed-leader', now() - interval '1 minute', now() - interval '1 second')`)
	require.NoError(t, err)
	job := func(state, at string, unique bool) int64 {
		var id int64
		require.NoError(t, owner.QueryRow(ctx, `INSERT INTO river.river_job (kind, args, state, max_attempts, scheduled_at, queue, unique_key, unique_states)
			VALUES ('mio.dispatch', '{}', $1::river.river_job_state, 25, now() + $2::interval, 'default',
			        CASE WHEN $3 THEN '\x01'::bytea END, CASE WHEN $3 THEN B'11110101' END) RETURNING id`,
			state, at, unique).Scan(&id))
		return id
	}
	snoozed := job("scheduled", "-1 second", false)
	backingOff := job("retryable", "-1 second", false)
	later := job("scheduled", "1 hour", false)
	unique := job("scheduled", "-1 second", true)
	available := job("available", "-1 second", false)
	state := func(id int64) string {
		var s string
		require.NoError(t, owner.QueryRow(ctx, `SELECT state::text FROM river.river_job WHERE id = $1`, id).Scan(&s))
		return s
	}
	leader := func(id string) {
		_, err := owner.Exec(ctx, `DELETE FROM river.river_leader`)
		require.NoError(t, err)
		if id != "" {
			_, err = owner.Exec(ctx, `INSERT INTO river.river_leader (elected_at, expires_at, leader_id, name)
				VALUES (now(), now() + interval '1 hour', $1, 'default')`, id)
			require.NoError(t, err)
		}
	}

	leader("leader")
	got, err := db.WorkerSchedule(ctx, env.Pool, "judge", 10*time.Second, 100)
	require.NoError(t, err)
	require.Empty(t, got, "scheduled while a live leader holds office")

	leader("killed-leader")
	got, err = db.WorkerSchedule(ctx, env.Pool, "young", 10*time.Second, 100)
	require.NoError(t, err)
	require.Empty(t, got, "a worker alive for less than the timeout scheduled")
	require.Equal(t, "scheduled", state(snoozed))

	got, err = db.WorkerSchedule(ctx, env.Pool, "judge", 10*time.Second, 100)
	require.NoError(t, err)
	require.ElementsMatch(t, []db.ScheduledJob{{ID: snoozed, Kind: "mio.dispatch", Queue: "default"},
		{ID: backingOff, Kind: "mio.dispatch", Queue: "default"}}, got, "a leader whose heartbeat expired schedules nothing")
	for id, want := range map[int64]string{snoozed: "available", backingOff: "available", later: "scheduled",
		unique: "scheduled", available: "available"} {
		require.Equal(t, want, state(id), "job %d", id)
	}

	leader("") // after a crash-restart of PostgreSQL: the unlogged leader table is empty
	again := job("scheduled", "-1 second", false)
	got, err = db.WorkerSchedule(ctx, env.Pool, "judge", 10*time.Second, 100)
	require.NoError(t, err)
	require.Equal(t, []db.ScheduledJob{{ID: again, Kind: "mio.dispatch", Queue: "default"}}, got)
}

// TestHeartbeatSchedulesWithoutLeader: a send's dispatch job waits in
// scheduled (snoozed by a worker whose heartbeat was lost) while River's
// leadership is held by a process that was killed. River's scheduler runs
// only on the leader, so the job waits — until a live worker's heartbeat
// makes it available, and the send is handed off without a new leader.
func TestHeartbeatSchedulesWithoutLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := outOpts{noStart: true}
	b := newOutBundle(t, o)
	id := b.send(t, "webhook", "leaderless-1", "scheduled while nobody leads", nil)
	b.ownerExec(t, `UPDATE river.river_job SET state = 'scheduled', scheduled_at = now() - interval '1 second'
		WHERE id = (SELECT job_id FROM mio.outbox WHERE id = $1)`, id)
	b.ownerExec(t, `INSERT INTO river.river_leader (elected_at, expires_at, leader_id, name)
		VALUES (now(), now() + interval '1 hour', 'killed', 'default')`)
	b.ownerExec(t, `INSERT INTO mio.worker_heartbeats (client_id, alive_since, expires_at) VALUES
		('killed', now() - interval '1 minute', now() - interval '1 second'),
		('survivor', now() - interval '1 minute', now() + interval '10 seconds')`)

	live := b.newClient(t, o, true) // works jobs, cannot be elected
	b.clients = append(b.clients, live)
	time.Sleep(2 * time.Second)
	got, _ := b.get(t, id)
	require.Equal(t, db.HandoffQueued, got.HandoffState, "the job ran without a leader or a heartbeat")

	hb := workers.NewHeartbeat(b.env.Pool, workers.HeartbeatConfig{Timeout: 2 * time.Second})
	require.NoError(t, hb.Start(ctx, "survivor", live))
	t.Cleanup(hb.Stop)
	b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)
	got, _ = b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, got.HandoffState)
	var leader string
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT leader_id FROM river.river_leader`).Scan(&leader))
	require.Equal(t, "killed", leader, "a new leader was elected: the test proved nothing")
}
