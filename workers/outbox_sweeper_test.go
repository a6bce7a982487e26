package workers_test

import (
	"context"
	"fmt"
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
				n, err := workers.SweepTenant(ctx, b.env.Pool, b.clients[0], b.tenant, workers.OutboxSweepConfig{Now: clock})
				require.NoError(t, err)
				return n
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

func (b *outBundle) ownerExec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.owner.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}
