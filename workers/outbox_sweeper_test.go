package workers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/workers"
)

// TestSweeperRecoversLostDispatch: a row that no live job will dispatch
// gets a new job from the sweeper once the sweeper's staleness bound has
// passed — not before, and only once — and is then sent as its first
// attempt. The sweeper's clock is moved instead of waiting the bounds
// out (Grace 10 s, StuckAfter 3 min by default): a sweeper that ignored
// its clock, or did not find the row, fails the test.
func TestSweeperRecoversLostDispatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// lose leaves the message where a crash or a lost job would.
		lose  func(t *testing.T, b *outBundle, id uuid.UUID, jobID int64)
		early time.Duration // the clock moved this far: not swept yet
		late  time.Duration // this far: swept
		// again: a sweep right after the row got its new job sweeps it
		// again (a sending row whose lease ended gets a job at every sweep
		// until one claims it).
		again    bool
		timeline []string
	}{
		{
			name: "job gone",
			lose: func(t *testing.T, b *outBundle, _ uuid.UUID, jobID int64) {
				b.ownerExec(t, `DELETE FROM river.river_job WHERE id = $1`, jobID)
			},
			early: 5 * time.Second, late: 11 * time.Second,
			timeline: []string{"queued:queued@1", "sending:sending@1", "handed_off:handed_off@1", "accepted:accepted@1"},
		},
		{
			name: "job stuck running on a dead process",
			lose: func(t *testing.T, b *outBundle, _ uuid.UUID, jobID int64) {
				b.ownerExec(t, `UPDATE river.river_job SET state = 'running', attempt = 1, attempted_at = now() WHERE id = $1`, jobID)
			},
			early: time.Minute, late: 3*time.Minute + 11*time.Second,
			timeline: []string{"queued:queued@1", "sending:sending@1", "handed_off:handed_off@1", "accepted:accepted@1"},
		},
		{
			name: "attempt abandoned, its job snoozed far away",
			lose: func(t *testing.T, b *outBundle, id uuid.UUID, jobID int64) {
				require.NoError(t, b.disps[0].ClaimOnly(context.Background(), b.tenant, id))
				b.ownerExec(t, `UPDATE river.river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour' WHERE id = $1`, jobID)
			},
			early: 5 * time.Second, late: 11 * time.Second, again: true,
			timeline: []string{"queued:queued@1", "sending:sending@1", "resumed:sending@1",
				"handed_off:handed_off@1", "accepted:accepted@1"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			o := outOpts{noStart: true, dispatch: workers.DispatchConfig{Lease: 300 * time.Millisecond}}
			b := newOutBundle(t, o)
			id := b.send(t, "webhook", "sweep-1", "found again", nil)
			c.lose(t, b, id, b.jobOf(t, id))

			start := time.Now()
			sweep := func(moved time.Duration) int {
				t.Helper()
				clock := func() time.Time { return start.Add(moved) }
				res, err := workers.NewOutboxSweeper(b.env.Pool, b.clients[0], workers.OutboxSweepConfig{Now: clock}).Sweep(ctx)
				require.NoError(t, err)
				require.True(t, res.Swept)
				return res.Enqueued
			}
			require.Zero(t, sweep(c.early), "swept before its bound")
			require.Equal(t, 1, sweep(c.late))
			if !c.again {
				require.Zero(t, sweep(c.late), "its new job is live: swept once")
			}

			b.clients = append(b.clients, b.newClient(t, o, true)) // a process that works the new job
			b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)
			got, ev := b.get(t, id)
			require.Equal(t, db.HandoffHandedOff, got.HandoffState)
			require.Equal(t, c.timeline, timeline(ev))
			calls := b.fake.Calls()
			require.Len(t, calls, 1, "sent once")
			require.Equal(t, fmt.Sprintf("mio-%s", id), calls[0].Key, "the first series")
		})
	}
}

// TestSweepOnePassAtATime: two worker processes' sweepers share the
// outbox. While one pass holds the sweeper's lock, the other process's
// pass returns at once without sweeping (it neither waits nor enqueues);
// once the first has committed, the next pass of either sweeps and finds
// the row's new job live.
func TestSweepOnePassAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := outOpts{noStart: true, dispatch: workers.DispatchConfig{Lease: 300 * time.Millisecond}}
	b := newOutBundle(t, o)
	b.clients = append(b.clients, b.newClient(t, o, false))
	id := b.send(t, "webhook", "sweep-once", "one pass", nil)
	b.ownerExec(t, `DELETE FROM river.river_job WHERE id = $1`, b.jobOf(t, id))

	later := func() time.Time { return time.Now().Add(time.Minute) } // past the grace
	first := workers.NewOutboxSweeper(b.env.Pool, b.clients[0], workers.OutboxSweepConfig{Now: later})
	second := workers.NewOutboxSweeper(b.env.Pool, b.clients[1], workers.OutboxSweepConfig{Now: later})
	locked, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo) // a failed assertion must not leave the pass holding its connection
	first.SetAfterLock(func() {
		close(locked)
		<-release
	})
	type outcome struct {
		res workers.SweepResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := first.Sweep(ctx)
		done <- outcome{res, err}
	}()
	<-locked

	began := time.Now()
	res, err := second.Sweep(ctx)
	require.NoError(t, err)
	require.False(t, res.Swept, "swept while another process held the lock")
	require.Zero(t, res.Enqueued)
	require.Less(t, time.Since(began), 2*time.Second, "waited for the lock")

	letGo()
	got := <-done
	require.NoError(t, got.err)
	require.Equal(t, workers.SweepResult{Swept: true, Enqueued: 1}, got.res)

	first.SetAfterLock(nil)
	for _, s := range []*workers.OutboxSweeper{second, first} {
		res, err := s.Sweep(ctx)
		require.NoError(t, err)
		require.Equal(t, workers.SweepResult{Swept: true}, res, "the row's new job is live")
	}
}

// TestSweepWithoutLeader: a row whose worker died mid-send (sending, its
// job snoozed far away) gets a new job within the sweeper's grace and
// interval of its lease's end while River has no leader to run anything
// (a killed leader's row holds office), from the sweepers of two running
// worker processes; the new job sends it.
func TestSweepWithoutLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The dead worker's lease is cut short below; the new job's claim
	// takes a lease as long as a real one, so that its send and finish,
	// however slow on a loaded machine under the race detector, end
	// within it (a send outliving its lease is taken over by the next job
	// the sweeper queued, and sent twice, as the lease allows).
	const lease, grace, interval = 30 * time.Second, 500 * time.Millisecond, 200 * time.Millisecond
	o := outOpts{noStart: true, dispatch: workers.DispatchConfig{Lease: lease}}
	b := newOutBundle(t, o)
	b.ownerExec(t, `INSERT INTO river.river_leader (leader_id, elected_at, expires_at) VALUES ('killed', now(), now() + interval '1 hour')`)
	id := b.send(t, "webhook", "no-leader", "abandoned", nil)
	jobID := b.jobOf(t, id)
	require.NoError(t, b.disps[0].ClaimOnly(ctx, b.tenant, id))
	b.ownerExec(t, `UPDATE river.river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour' WHERE id = $1`, jobID)
	b.ownerExec(t, `UPDATE mio.outbox SET lease_until = now() + interval '300 milliseconds' WHERE id = $1`, id)

	cfg := workers.OutboxSweepConfig{Grace: grace, Interval: interval}
	for range 2 {
		client := b.newClient(t, o, true)
		b.clients = append(b.clients, client)
		runSweeper(t, workers.NewOutboxSweeper(b.env.Pool, client, cfg))
	}
	var leaseUntil time.Time
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT lease_until FROM mio.outbox WHERE id = $1`, id).Scan(&leaseUntil))
	require.Eventually(t, func() bool {
		var now int64
		err := b.owner.QueryRow(ctx, `SELECT job_id FROM mio.outbox WHERE id = $1`, id).Scan(&now)
		return err == nil && now != jobID
	}, 10*time.Second, 10*time.Millisecond, "never swept")
	// The bound: grace + interval, and some slack for the pass itself.
	require.Less(t, time.Since(leaseUntil), grace+interval+time.Second, "swept late")
	b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)
	got, _ := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, got.HandoffState)
	require.Len(t, b.fake.Calls(), 1, "sent once")
	var leader string
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT leader_id FROM river.river_leader`).Scan(&leader))
	require.Equal(t, "killed", leader, "a River leader was elected")
}

func (b *outBundle) ownerExec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.owner.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}
