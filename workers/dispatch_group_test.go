package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
