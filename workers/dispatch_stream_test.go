package workers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/workers"
)

// editRate is a fake platform script that answers 429 to a call of a
// conversation that comes sooner than every after its previous call, as
// a platform enforcing its edit rate does; limited counts them.
type editRate struct {
	every   time.Duration
	mu      sync.Mutex
	last    map[string]time.Time
	limited int
}

func newEditRate(every time.Duration) *editRate {
	return &editRate{every: every, last: map[string]time.Time{}}
}

func (r *editRate) script(channel, conversation string, _ int) action {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := channel + "/" + conversation
	now := time.Now()
	// 10 ms of slack for the scheduling of the two ends.
	if last, ok := r.last[k]; ok && now.Sub(last) < r.every-10*time.Millisecond {
		r.limited++
		return actRateLimit
	}
	r.last[k] = now
	return actOK
}

func (r *editRate) Limited() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limited
}

// streamEvery is the edit interval the stream tests give every channel.
const streamEvery = 100 * time.Millisecond

func streamDispatch(cfg workers.DispatchConfig) workers.DispatchConfig {
	cfg.StreamEditIntervals = map[string]time.Duration{}
	for _, ct := range allChannels {
		cfg.StreamEditIntervals[ct] = streamEvery
	}
	return cfg
}

// openStream opens a stream in conversation as POST /v1/outbound with
// "stream": true does.
func (b *outBundle) openStream(t testing.TB, channel, conversation, start string) uuid.UUID {
	t.Helper()
	sent, err := outbox.New(b.env.Pool, b.clients[0]).Send(context.Background(), b.tenant, &envelope.SendCommand{
		IdempotencyKey: uuid.NewString(), AccountID: b.accounts[channel], ConversationID: conversation,
		Text: start, Stream: true})
	require.NoError(t, err)
	return sent.ID
}

// callsOf returns the fake's calls of one conversation.
func (b *outBundle) callsOf(channel, conversation string) []call {
	var out []call
	for _, c := range b.fake.Calls() {
		if c.Channel == channel && c.Conversation == conversation {
			out = append(out, c)
		}
	}
	return out
}

// appendAll appends deltas one every gap, then finishes the stream.
func appendAll(t testing.TB, svc *outbox.Service, tenant, id uuid.UUID, deltas []string, gap time.Duration) {
	t.Helper()
	ctx := context.Background()
	for i, d := range deltas {
		require.NoError(t, svc.Append(ctx, tenant, id, i+1, d))
		time.Sleep(gap)
	}
	require.NoError(t, svc.FinishStream(ctx, tenant, id, outbox.Finish{Seq: len(deltas)}))
}

// appendShown appends deltas one every gap and finishes the stream, as
// appendAll does, but paced by what the platform shows of conversation
// conv of channel ct: after the first delta it waits for the platform's
// first call, and before the last delta for its shown-th. A stream is then
// seen growing however late its first call comes on a loaded machine
// (appendAll's 40 deltas take 400 ms, which a slow first claim can
// outlast, leaving one call with the final text), and the final text is
// one more call. shown 0 waits for nothing (a channel that sends only
// the final text).
func (b *outBundle) appendShown(t testing.TB, svc *outbox.Service, ct, conv string, id uuid.UUID, deltas []string,
	gap time.Duration, shown int) {
	t.Helper()
	ctx := context.Background()
	waitCalls := func(n int) {
		require.Eventually(t, func() bool { return len(b.callsOf(ct, conv)) >= n }, 20*time.Second, 5*time.Millisecond,
			"%s: the platform takes call %d of the stream", ct, n)
	}
	last := len(deltas) - 1
	for i, d := range deltas[:last] {
		require.NoError(t, svc.Append(ctx, b.tenant, id, i+1, d))
		if i == 0 {
			waitCalls(min(shown, 1))
		}
		time.Sleep(gap)
	}
	waitCalls(shown)
	require.NoError(t, svc.Append(ctx, b.tenant, id, last+1, deltas[last]))
	require.NoError(t, svc.FinishStream(ctx, b.tenant, id, outbox.Finish{Seq: len(deltas)}))
}

func deltas(n int) ([]string, string) {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d ", i)
	}
	return out, strings.Join(out, "")
}

// editConversation is a conversation of channel ct that streams by
// edits: a Slack channel, a Telegram group, a Teams channel, a Google
// Chat space (i tells the tests' conversations apart).
func editConversation(ct string, i int) string {
	switch ct {
	case "slack":
		return fmt.Sprintf("C%d", 4200+i)
	case "telegram":
		return fmt.Sprint(-4200 - i)
	case "teams":
		return fmt.Sprintf("19:%d@thread.tacv2", 4200+i)
	case "google_chat":
		return fmt.Sprintf("spaces/S%d", 4200+i)
	}
	return fmt.Sprint(4200 + i) // a chat id and a snowflake
}

// TestStreamEditsAtTheChannelRate: on every channel, in a conversation
// without native streaming, a stream of 40 deltas (one every 10 ms, ten
// per edit interval, paced by the platform's calls: appendShown) reaches
// the platform as one message sent and then edited, never sooner than the
// edit interval after the previous call (the fake answers 429 to a call
// that comes sooner: none does), the newest text each time, ending with
// exactly the concatenation. A channel that cannot edit (WhatsApp, Zoho
// Cliq) gets one message with the final text.
func TestStreamEditsAtTheChannelRate(t *testing.T) {
	t.Parallel()
	rate := newEditRate(streamEvery)
	b := newOutBundle(t, outOpts{script: rate.script, dispatch: streamDispatch(workers.DispatchConfig{})})
	svc := outbox.New(b.env.Pool, b.clients[0])
	parts, full := deltas(40)
	var wg sync.WaitGroup
	ids := map[string]uuid.UUID{}
	for i, ct := range allChannels {
		conv := editConversation(ct, i)
		id := b.openStream(t, ct, conv, "")
		ids[ct] = id
		// Calls the platform takes before the final text: the send and an
		// edit; the send alone on Google Chat (its per-space bucket of one
		// write a second holds the next back); none where the channel
		// cannot edit.
		shown := 2
		switch ct {
		case "google_chat":
			shown = 1
		case "whatsapp", "zoho_cliq":
			shown = 0
		}
		wg.Go(func() { b.appendShown(t, svc, ct, conv, id, parts, 10*time.Millisecond, shown) })
	}
	wg.Wait()
	all := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		all = append(all, id)
	}
	b.waitTerminal(t, all, 20*time.Second)
	require.Zero(t, rate.Limited(), "no call came sooner than the edit interval")

	for _, ct := range allChannels {
		o, events := b.get(t, ids[ct])
		require.Equal(t, db.HandoffHandedOff, o.HandoffState, "%s: %s %v", ct, o.LastError, timeline(events))
		conv := o.ConversationID
		calls := b.callsOf(ct, conv)
		require.NotEmpty(t, calls, ct)
		last := calls[len(calls)-1]
		require.Equal(t, full, last.Text, "%s: the last call shows the concatenation", ct)
		if ct == "whatsapp" || ct == "zoho_cliq" {
			require.Len(t, calls, 1, "%s cannot edit: one message with the final text", ct)
			continue
		}
		require.Equal(t, "send", calls[0].Op, ct)
		if ct == "google_chat" {
			// Its per-space bucket (one write a second) holds the edits of
			// a stream this short back: the message is sent, then edited
			// to the final text once or more.
			require.GreaterOrEqual(t, len(calls), 2, ct)
		} else {
			require.GreaterOrEqual(t, len(calls), 3, "%s: the text grew in several edits", ct)
		}
		require.Less(t, len(calls), 20, "%s: deltas were coalesced", ct)
		for i, c := range calls[1:] {
			require.Equal(t, "edit", c.Op, ct)
			require.GreaterOrEqual(t, c.At.Sub(calls[i].At), streamEvery-10*time.Millisecond, "%s: call %d", ct, i+1)
			require.True(t, strings.HasPrefix(full, c.Text), "%s: each edit shows a prefix of the text", ct)
		}
		tl := timeline(events)
		require.Contains(t, tl, "stream_opened:sending@1", ct)
		require.Contains(t, tl, "stream_finished:sending@1", ct)
		require.Contains(t, tl, "handed_off:handed_off@1", ct)
	}
}

// TestStreamResumedAfterItsWorkerStops: the process sending a stream
// stops mid-stream without recording anything (its River client cancels
// the job, as a killed worker leaves it); appends and the finish go on
// meanwhile. Once the attempt's lease ends another process resumes the
// attempt and edits the same message to the complete final text: one
// message sent in all.
func TestStreamResumedAfterItsWorkerStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := outOpts{dispatch: streamDispatch(workers.DispatchConfig{Lease: time.Second})}
	b := newOutBundle(t, o)
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "webhook", "crash", "")
	parts, full := deltas(20)
	for i, p := range parts[:10] {
		require.NoError(t, svc.Append(ctx, b.tenant, id, i+1, p))
	}
	half := strings.Join(parts[:10], "")
	require.Eventually(t, func() bool {
		calls := b.callsOf("webhook", "crash")
		row, _ := b.get(t, id)
		return len(calls) > 0 && calls[len(calls)-1].Text == half && row.ProviderMessageID != ""
	}, 10*time.Second, 10*time.Millisecond, "the first process shows the first half and recorded its message")
	require.NoError(t, b.clients[0].StopAndCancel(ctx))
	for i, p := range parts[10:] {
		require.NoError(t, svc.Append(ctx, b.tenant, id, i+11, p))
	}
	require.NoError(t, svc.FinishStream(ctx, b.tenant, id, outbox.Finish{Seq: len(parts)}))

	o.sweep = true
	b.newClient(t, o, true)
	b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)
	row, events := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, row.HandoffState, row.LastError)
	calls := b.callsOf("webhook", "crash")
	require.Equal(t, "send", calls[0].Op)
	for _, c := range calls[1:] {
		require.Equal(t, "edit", c.Op, "one message sent in all")
	}
	require.Equal(t, full, calls[len(calls)-1].Text)
	require.Contains(t, timeline(events), "resumed:sending@1", "the same attempt, resumed")
}

// TestStreamHoldsItsConversation: a message sent in a stream's
// conversation after the stream opened waits for the stream's finish
// (per-conversation order), while another conversation's does not.
func TestStreamHoldsItsConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutBundle(t, outOpts{dispatch: streamDispatch(workers.DispatchConfig{})})
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "webhook", "held", "Working on it")
	later := b.send(t, "webhook", "held", "after the stream", nil)
	other := b.send(t, "webhook", "elsewhere", "not held", nil)
	b.waitTerminal(t, []uuid.UUID{other}, 10*time.Second)
	require.Eventually(t, func() bool { return len(b.callsOf("webhook", "held")) > 0 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, svc.Append(ctx, b.tenant, id, 1, "…"))
	require.Never(t, func() bool {
		row, _ := b.get(t, later)
		return row.HandoffState != db.HandoffQueued
	}, 5*streamEvery, 20*time.Millisecond, "the later message waits while the stream is open")

	final := "Done: 42"
	require.NoError(t, svc.FinishStream(ctx, b.tenant, id, outbox.Finish{Text: &final}))
	b.waitTerminal(t, []uuid.UUID{id, later}, 10*time.Second)
	calls := b.callsOf("webhook", "held")
	require.Equal(t, "after the stream", calls[len(calls)-1].Text, "sent last")
	require.Equal(t, final, calls[len(calls)-2].Text, "after the stream's final text")
}

// TestStreamTimesOut: a stream its agent never finishes is finished after
// StreamTimeout with the text so far, recorded as stream_timed_out; later
// appends are refused.
func TestStreamTimesOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutBundle(t, outOpts{dispatch: streamDispatch(workers.DispatchConfig{StreamTimeout: 500 * time.Millisecond})})
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "webhook", "abandoned", "partial")
	require.NoError(t, svc.Append(ctx, b.tenant, id, 1, " answer"))
	b.waitTerminal(t, []uuid.UUID{id}, 10*time.Second)
	row, events := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, row.HandoffState)
	require.Contains(t, timeline(events), "stream_timed_out:sending@1")
	calls := b.callsOf("webhook", "abandoned")
	require.Equal(t, "partial answer", calls[len(calls)-1].Text)
	require.ErrorIs(t, svc.Append(ctx, b.tenant, id, 2, " more"), outbox.ErrStreamFinished)
	v := outbox.ViewOf(row, events)
	require.Equal(t, &outbox.StreamView{Seq: 1, Finished: true}, v.Stream)
}

// TestStreamEditsShareTheAccountRate: a stream's edits take tokens from
// the account's rate-limit bucket as its sends do: at 2 a second (burst
// 1) the edits come about half a second apart, though the edit interval
// would allow ten a second.
func TestStreamEditsShareTheAccountRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutBundle(t, outOpts{dispatch: streamDispatch(workers.DispatchConfig{})})
	_, err := b.owner.Exec(ctx, `UPDATE mio.accounts SET rate_limit_per_sec = 2, rate_limit_burst = 1 WHERE id = $1`, b.accounts["webhook"])
	require.NoError(t, err)
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "webhook", "limited", "")
	parts, full := deltas(150)
	appendAll(t, svc, b.tenant, id, parts, 10*time.Millisecond)
	b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)
	calls := b.callsOf("webhook", "limited")
	require.Equal(t, full, calls[len(calls)-1].Text)
	require.GreaterOrEqual(t, len(calls), 3)
	for i := 2; i < len(calls)-1; i++ {
		require.GreaterOrEqual(t, calls[i].At.Sub(calls[i-1].At), 400*time.Millisecond, "edit %d waited for its token", i)
	}
}

// TestStreamHandedOverAtTheJobTimeout: a stream open longer than one run
// of its dispatch job is handed over near the job's timeout (the run ends
// its lease and gives the row a new job) and the next run resumes the
// same attempt and the same message: one message sent in all, every edit
// a prefix of the text (nothing shown twice), the last call exactly the
// concatenation.
func TestStreamHandedOverAtTheJobTimeout(t *testing.T) {
	t.Parallel()
	// A run hands over SendTimeout + 5 s before its job's timeout: here
	// 1.5 s into each run, while the stream appends for 4 s.
	cfg := streamDispatch(workers.DispatchConfig{SendTimeout: time.Second, JobTimeout: 7500 * time.Millisecond})
	b := newOutBundle(t, outOpts{dispatch: cfg, sweep: true})
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "webhook", "long", "")
	parts, full := deltas(40)
	appendAll(t, svc, b.tenant, id, parts, 100*time.Millisecond)
	b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)

	row, events := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, row.HandoffState, "%s %v", row.LastError, timeline(events))
	tl := timeline(events)
	require.Contains(t, tl, "resumed:sending@1", "the next run resumed the same attempt")
	calls := b.callsOf("webhook", "long")
	require.Equal(t, "send", calls[0].Op)
	for _, c := range calls[1:] {
		require.Equal(t, "edit", c.Op, "one message sent in all")
		require.True(t, strings.HasPrefix(full, c.Text), "each edit shows a prefix of the text: %q", c.Text)
	}
	require.Equal(t, full, calls[len(calls)-1].Text)
	handedOff := 0
	for _, e := range tl {
		if strings.HasPrefix(e, "handed_off:") {
			handedOff++
		}
	}
	require.Equal(t, 1, handedOff, "handed off once: %v", tl)
}

// TestStreamLooksReadBetweenLeaseExtensions: the dispatcher's looks at a
// stream only read the row until a third of the lease has passed since
// they last extended it (the lease stays as it was while the stream is
// edited), and its edits are recorded as one stream_edited event counting
// them, not one event (and one row version) per edit.
func TestStreamLooksReadBetweenLeaseExtensions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutBundle(t, outOpts{dispatch: streamDispatch(workers.DispatchConfig{Lease: time.Minute})})
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "webhook", "reads", "")
	parts, full := deltas(30)
	require.NoError(t, svc.Append(ctx, b.tenant, id, 1, parts[0]))
	require.Eventually(t, func() bool {
		row, events := b.get(t, id)
		return row.ProviderMessageID != "" && len(events) > 0 && events[len(events)-1].Event == db.EventStreamOpened
	}, 10*time.Second, 10*time.Millisecond, "the message sent and its id recorded")
	var leases []time.Time
	for i, p := range parts[1:] {
		require.NoError(t, svc.Append(ctx, b.tenant, id, i+2, p))
		time.Sleep(20 * time.Millisecond)
		if i%10 == 0 {
			row, _ := b.get(t, id)
			leases = append(leases, *row.LeaseUntil)
		}
	}
	require.NoError(t, svc.FinishStream(ctx, b.tenant, id, outbox.Finish{Seq: len(parts)}))
	b.waitTerminal(t, []uuid.UUID{id}, 10*time.Second)
	for _, l := range leases[1:] {
		require.Equal(t, leases[0], l, "the lease is not extended by every look")
	}

	row, events := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, row.HandoffState)
	calls := b.callsOf("webhook", "reads")
	require.Equal(t, full, calls[len(calls)-1].Text)
	edits := 0
	for _, c := range calls[1:] {
		if c.Op == "edit" {
			edits++
		}
	}
	recorded := 0
	for _, e := range events {
		if e.Event != db.EventStreamEdited {
			continue
		}
		var d struct{ Edits int }
		require.NoError(t, json.Unmarshal(e.Detail, &d))
		recorded += d.Edits
	}
	require.Equal(t, 1, strings.Count(strings.Join(timeline(events), " "), db.EventStreamEdited), "one stream_edited event: %v", timeline(events))
	// The final call, when it edits, is recorded as handed_off.
	require.Contains(t, []int{edits, edits - 1}, recorded, "the event counts the edits before the final call")
}

// TestStreamLooksShareBoundedConnections: the open streams of a process
// look at their rows through at most DispatchConfig.StreamConns pool
// connections at once, so streams opened together never take every
// connection of the pool. The outbox is locked while four streams are
// open: one stream's look waits for the lock in the database; the
// others wait for a connection slot, not in the database.
func TestStreamLooksShareBoundedConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := metrics.NewOutbound(prometheus.NewRegistry())
	b := newOutBundle(t, outOpts{dispatch: streamDispatch(workers.DispatchConfig{StreamConns: 1, Metrics: m})})
	svc := outbox.New(b.env.Pool, b.clients[0])
	var ids []uuid.UUID
	for i := range 4 {
		ids = append(ids, b.openStream(t, "webhook", fmt.Sprint("bounded-", i), fmt.Sprint("stream ", i)))
	}
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if row, _ := b.get(t, id); row.ProviderMessageID == "" {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every stream sent its message and recorded it")

	tx, err := b.owner.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) }) // a failure must not leave the lock held
	_, err = tx.Exec(ctx, "LOCK TABLE mio.outbox IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	waiting := func() int {
		var n int
		require.NoError(t, b.owner.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
			  AND (query LIKE '%OutboxStreamRead%' OR query LIKE '%OutboxStreamPoll%')`).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return waiting() == 1 }, 5*time.Second, 10*time.Millisecond,
		"one stream's look waits for the lock")
	require.Never(t, func() bool { return waiting() > 1 }, 10*streamEvery, 10*time.Millisecond,
		"the other streams' looks wait for the connection slot")
	require.Equal(t, 4.0, testutil.ToFloat64(m.StreamsOpen.WithLabelValues("webhook")), "mio_outbound_streams_open")
	waits := histogram(t, m.StreamConnWaits)
	require.NoError(t, tx.Rollback(ctx))
	require.Eventually(t, func() bool {
		h := histogram(t, m.StreamConnWaits)
		return h.GetSampleSum()-waits.GetSampleSum() >= (10 * streamEvery).Seconds()
	}, 5*time.Second, 10*time.Millisecond, "the streams' waits for the slot while the lock was held are observed once they end")

	for _, id := range ids {
		require.NoError(t, svc.Append(ctx, b.tenant, id, 1, " done"))
		require.NoError(t, svc.FinishStream(ctx, b.tenant, id, outbox.Finish{Seq: 1}))
	}
	b.waitTerminal(t, ids, 10*time.Second)
	for i := range ids {
		calls := b.callsOf("webhook", fmt.Sprint("bounded-", i))
		require.Equal(t, fmt.Sprint("stream ", i, " done"), calls[len(calls)-1].Text)
	}
	require.Zero(t, testutil.ToFloat64(m.StreamsOpen.WithLabelValues("webhook")), "mio_outbound_streams_open")
}

// histogram reads h's current counts.
func histogram(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	t.Helper()
	var out dto.Metric
	require.NoError(t, h.Write(&out))
	return out.GetHistogram()
}
