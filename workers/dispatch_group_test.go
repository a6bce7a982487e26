package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/workers"
)

// TestGroupJobSendsItsRows: the sends of one account written together
// share a dispatch job (outbox.JobGroupRows per job), and that job sends
// all of them. Extras are off, so no other job could take them: without
// the group's claim, every row but each job's first would wait for the
// sweeper (not running here) and the test would time out. On a
// rate-limited account (slack here) the group's job gives its other rows
// jobs of their own, and they are sent too.
func TestGroupJobSendsItsRows(t *testing.T) {
	t.Parallel()
	// A send timeout far above the fake's answer time: a send that timed
	// out after the fake recorded it is sent again (at least once, by
	// design), and "sent once" is what this test counts. The bundle's
	// default, 300 ms, was reached under the race detector on a loaded
	// machine.
	b := newOutBundle(t, outOpts{dispatch: workers.DispatchConfig{Extras: -1, SendTimeout: 5 * time.Second}})
	ctx := context.Background()
	n := 2*outbox.JobGroupRows + 3
	convs := make([]string, n)
	texts := make([]string, n)
	for i := range n {
		convs[i] = fmt.Sprintf("90000000000000%04d", i)
		texts[i] = fmt.Sprintf("group %d", i)
	}
	fast := b.sendMany(t, "webhook", convs, texts, nil)
	limited := b.sendMany(t, "slack", convs, texts, nil)
	var jobs int
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT count(DISTINCT job_id) FROM mio.outbox WHERE id = ANY ($1)`, fast).Scan(&jobs))
	require.Equal(t, 3, jobs, "%d rows of one account: one job per %d", n, outbox.JobGroupRows)

	b.waitTerminal(t, append(fast, limited...), 30*time.Second)
	sent := map[string]int{}
	for _, c := range b.fake.Calls() {
		sent[c.Channel+" "+c.Text]++
	}
	for _, ch := range []string{"webhook", "slack"} {
		for i := range n {
			require.Equal(t, 1, sent[ch+" "+texts[i]], "%s %s sent once", ch, texts[i])
		}
	}
	var notHandedOff int
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT count(*) FROM mio.outbox WHERE id = ANY ($1) AND handoff_state <> 'handed_off'`,
		append(fast, limited...)).Scan(&notHandedOff))
	require.Zero(t, notHandedOff)
}

// TestGroupJobSendsARowUpdatedDuringItsClaim: a row of a group job that
// is updated while the job's claim waits for it (a streamed reply's
// append, committed between the claim's look at the row and its lock)
// is missed by that claim, which locks rows by the version it saw. The
// row is queued, due and first of its lane, so no lane hands on to it
// and no other job takes it: it must still be sent, without the
// sweeper (not running here).
func TestGroupJobSendsARowUpdatedDuringItsClaim(t *testing.T) {
	t.Parallel()
	o := outOpts{noStart: true, dispatch: workers.DispatchConfig{Extras: -1, SendTimeout: 5 * time.Second}}
	b := newOutBundle(t, o)
	ctx := context.Background()
	ids := b.sendMany(t, "webhook", []string{"group-race-1", "group-race-2"}, []string{"first", "second"}, nil)
	var own uuid.UUID
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT (args->>'outbox_id')::uuid FROM river.river_job
		WHERE kind = 'mio.dispatch' AND args->>'outbox_id' = ANY ($1::text[])`,
		[]string{ids[0].String(), ids[1].String()}).Scan(&own))
	also := ids[0]
	if own == also {
		also = ids[1]
	}

	// The update holds the row until the claim waits for it.
	tx, err := b.owner.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `UPDATE mio.outbox SET updated_at = now() WHERE id = $1`, also)
	require.NoError(t, err)
	b.clients = append(b.clients, b.newClient(t, o, true))
	require.Eventually(t, func() bool {
		var waiting int
		err := b.owner.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'`).Scan(&waiting)
		return err == nil && waiting > 0
	}, 10*time.Second, 5*time.Millisecond, "the claim waits for the row")
	require.NoError(t, tx.Commit(ctx))

	b.waitTerminal(t, ids, 10*time.Second)
	sent := map[string]int{}
	for _, c := range b.fake.Calls() {
		sent[c.Text]++
	}
	require.Equal(t, map[string]int{"first": 1, "second": 1}, sent)
}

// TestLaneHandsOnARowUpdatedDuringItsSend: a lane's third message, adopted
// by the job draining the lane, is held by another transaction (a
// streamed reply's append) when the lane is handed on to it. The hand-on
// skips a row it cannot lock; the row, whose own job the adoption
// deleted, must still be sent without the sweeper (not running here).
func TestLaneHandsOnARowUpdatedDuringItsSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		b       *outBundle
		third   uuid.UUID
		held    = make(chan pgx.Tx, 1)
		holdErr error
	)
	o := outOpts{noStart: true, dispatch: workers.DispatchConfig{Extras: -1, SendTimeout: 5 * time.Second},
		script: func(channel, conversation string, n int) action {
			if conversation == "lane-race" && n == 2 {
				// The second message is being sent: hold the third.
				tx, err := b.owner.Begin(ctx)
				if err == nil {
					_, err = tx.Exec(ctx, `UPDATE mio.outbox SET updated_at = now() WHERE id = $1`, third)
				}
				holdErr = err
				held <- tx
			}
			return actOK
		}}
	b = newOutBundle(t, o)
	ids := b.sendMany(t, "webhook", []string{"lane-race"}, []string{"one", "two", "three"}, nil)
	third = ids[2]
	b.clients = append(b.clients, b.newClient(t, o, true))

	tx := <-held
	defer tx.Rollback(ctx) //nolint:errcheck
	require.NoError(t, holdErr)
	// The hand-on after the second message has passed the third by: no
	// job runs any more, or one waits for the held row.
	b.waitTerminal(t, ids[:2], 10*time.Second)
	require.Eventually(t, func() bool {
		var running, waiting int
		err := b.owner.QueryRow(ctx, `SELECT (SELECT count(*) FROM river.river_job WHERE kind = 'mio.dispatch' AND state = 'running'),
			(SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid')`).Scan(&running, &waiting)
		return err == nil && (running == 0 || waiting > 0)
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, tx.Commit(ctx))

	b.waitTerminal(t, ids, 10*time.Second)
	var texts []string
	for _, c := range b.fake.Calls() {
		texts = append(texts, c.Text)
	}
	require.Equal(t, []string{"one", "two", "three"}, texts)
}
