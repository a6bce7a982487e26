package workers_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/workers"
)

// lanePark is a LaneWait no test outlives: a job parked behind its lane
// only runs again if a hand-on deletes and replaces it.
const lanePark = time.Hour

// TestDispatchLaneHandsOn: 200 sends to ONE conversation of the webhook
// channel (no rate limits), two dispatcher processes, no sweeper, and
// jobs parked behind their lane never wake up on their own: every message
// still reaches the platform once, in accepted order, because each
// hand-off claims the lane's next message (or, out of budget, gives it a
// job that runs now).
func TestDispatchLaneHandsOn(t *testing.T) {
	t.Parallel()
	b := newOutBundle(t, outOpts{processes: 2, dispatch: workers.DispatchConfig{SendTimeout: 10 * time.Second, LaneWait: lanePark}})
	texts := make([]string, 200)
	for i := range texts {
		texts[i] = fmt.Sprintf("l%04d", i)
	}
	ids := b.sendMany(t, "webhook", []string{"710000000000000001"}, texts, nil)
	b.waitTerminal(t, ids, 60*time.Second)
	var got []string
	for _, c := range b.fake.Calls() {
		got = append(got, c.Text)
	}
	require.Equal(t, texts, got)
	for _, id := range []int{0, len(ids) / 2, len(ids) - 1} {
		o, ev := b.get(t, ids[id])
		require.Equal(t, db.HandoffHandedOff, o.HandoffState)
		require.Equal(t, []string{"queued:queued@1", "sending:sending@1", "handed_off:handed_off@1", "accepted:accepted@1"}, timeline(ev))
	}
}

// TestDispatchLanesOrderUnderRetries: 16 lanes of 40 sends of the webhook
// channel, two dispatcher processes, every 7th call of a conversation a
// 5xx (the message is retried while the messages behind it wait), no
// sweeper and parked jobs that never wake: each message is handed off
// exactly once, and each conversation sees its calls in accepted order.
func TestDispatchLanesOrderUnderRetries(t *testing.T) {
	t.Parallel()
	b := newOutBundle(t, outOpts{processes: 2, script: func(_, _ string, n int) action {
		if n%7 == 3 {
			return actServerErr
		}
		return actOK
	}, dispatch: workers.DispatchConfig{SendTimeout: 10 * time.Second, LaneWait: lanePark}})
	const lanes, perLane = 16, 40
	conversations := make([]string, lanes)
	for i := range conversations {
		conversations[i] = fmt.Sprintf("72000000000000%04d", i)
	}
	texts := make([]string, lanes*perLane)
	for i := range texts {
		texts[i] = fmt.Sprintf("r%04d", i)
	}
	ids := b.sendMany(t, "webhook", conversations, texts, nil)
	b.waitTerminal(t, ids, 90*time.Second)
	ok := map[string]int{}
	byConv := map[string][]string{}
	for _, c := range b.fake.Calls() {
		byConv[c.Conversation] = append(byConv[c.Conversation], c.Text)
	}
	for conv, got := range byConv {
		// A retried message is called again before anything behind it.
		require.True(t, slices.IsSorted(got), "conversation %s out of order: %v", conv, got)
		for k, tx := range got {
			if k+1 == len(got) || got[k+1] != tx {
				ok[tx]++ // its last call: the one that succeeded
			}
		}
	}
	for _, tx := range texts {
		require.Equal(t, 1, ok[tx], "message %s", tx)
	}
	for _, id := range ids {
		o, _ := b.get(t, id)
		require.Equal(t, db.HandoffHandedOff, o.HandoffState)
	}
}
