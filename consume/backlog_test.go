package consume_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
)

// bulk commits n ready messages of account in ONE statement (as a bulk
// load does), received at at, with UUIDv7 ids of that time.
func (b *testBundle) bulk(t *testing.T, tenant, account uuid.UUID, channelType, conv string, n int, at time.Time) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
WITH ids AS (
    SELECT (substr(replace(mio.uuid_time_floor($5)::text, '-', ''), 1, 12) || '7' || substr(md5(random()::text || g::text), 1, 19))::uuid AS id
    FROM generate_series(1, $6::int) AS g
)
INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, conversation_id, source_message_id, state, envelope,
                       received_at, ready_xid, ready_seq, ready_at)
SELECT $1, ids.id, $2, $3, $4, 'bulk-' || ids.id, 'ready',
       jsonb_build_object('id', ids.id, 'tenant_id', $1::uuid, 'account_id', $2::uuid, 'channel_type', $3::text,
                          'source_message_id', 'bulk-' || ids.id, 'conversation', jsonb_build_object('id', $4::text, 'type', 'dm'),
                          'text', 'bulk', 'attachments', '[]'::jsonb),
       $5, pg_current_xact_id(), nextval('mio.inbox_ready_seq'), $5
FROM ids`, tenant, account, channelType, conv, at, n)
		return err
	}))
}

// pendingTruth reads, in ONE statement (one snapshot), a consumer's
// pending from mio.queue_health and the same number counted row by row
// from the inbox: its deliveries waiting plus every visible row of its
// stage that its position has not read (mio.log_read) and its filter
// matches.
func (b *testBundle) pendingTruth(t *testing.T, tenant uuid.UUID, name string) (view, truth int64) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `
SELECT h.pending,
       (SELECT count(*) FROM mio.consumer_deliveries AS d
        WHERE d.tenant_id = s.tenant_id AND d.consumer_name = s.name AND d.state = 'pending')
     + (SELECT count(*) FROM mio.inbox AS i
        WHERE i.tenant_id = s.tenant_id
          AND CASE WHEN s.stage = 'ready'
                   THEN i.ready_xid IS NOT NULL AND NOT mio.log_read(i.ready_xid, i.ready_seq, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq)
                   ELSE NOT mio.log_read(i.xid, i.seq, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq) END
          AND (cardinality(s.filter_channel_types) = 0 OR i.channel_type = ANY (s.filter_channel_types))
          AND (cardinality(s.filter_account_ids) = 0 OR i.account_id = ANY (s.filter_account_ids))
          AND (cardinality(s.filter_conversation_ids) = 0 OR i.conversation_id = ANY (s.filter_conversation_ids))
          AND (s.start_time IS NULL OR i.received_at >= s.start_time))
FROM mio.queue_health AS h
JOIN mio.consumer_state AS s ON s.tenant_id = h.tenant_id AND s.name = h.consumer
WHERE h.kind = 'consumer' AND h.tenant_id = $1 AND h.consumer = $2`, tenant, name).Scan(&view, &truth)
	}))
	return view, truth
}

// requirePending checks that every surface answers want for the
// consumer's pending: mio.queue_health (and, in the same snapshot, the
// row-by-row count), the consumer API, the admin API (consumer list,
// consumer show, queue health) and the mio_consumer_lag gauge.
func (b *testBundle) requirePending(t *testing.T, name string, want int64) {
	t.Helper()
	ctx := context.Background()
	view, truth := b.pendingTruth(t, b.tenant, name)
	require.Equal(t, want, truth, "row-by-row count")
	require.Equal(t, want, view, "mio.queue_health")

	info, err := b.client.GetConsumer(ctx, name)
	require.NoError(t, err)
	require.Equal(t, want, info.Stats.Pending, "GET /v1/consumers/{name}")

	list, err := b.svc.ConsumerList(ctx, b.tenant)
	require.NoError(t, err)
	var listed *admin.ConsumerInfo
	for _, c := range list {
		if c.Name == name {
			listed = c
		}
	}
	require.NotNil(t, listed)
	require.Equal(t, want, listed.Pending, "admin consumer list")
	shown, err := b.svc.ConsumerShow(ctx, b.tenant, name)
	require.NoError(t, err)
	require.Equal(t, want, shown.Pending, "admin consumer show")
	health, err := b.svc.QueueHealth(ctx, b.tenant)
	require.NoError(t, err)
	found := false
	for _, h := range health {
		if h.Consumer != nil && *h.Consumer == name {
			found = true
			require.Equal(t, want, *h.Pending, "admin queue health")
		}
	}
	require.True(t, found)

	m := metrics.New()
	require.NoError(t, consume.New(b.env.Pool, b.hub, m, nil, consume.Options{}).RefreshGauges(ctx))
	require.Equal(t, float64(want), testutil.ToFloat64(m.ConsumerLag.WithLabelValues(name)), "mio_consumer_lag")
}

// TestQueueHealthPendingExact: a consumer 300 messages behind shows
// pending 300 in mio.queue_health (not a cap), and every surface says the
// same for consumers 0, 100, 300, 5,000 and 12,000 behind (more than 100
// and 10,000: no count stops at a bound).
func TestQueueHealthPendingExact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// Each consumer starts at the end of the stream, then the messages it
	// is behind by are committed, in bulk (each batch counts for every
	// consumer created before it).
	for _, step := range []struct {
		name string
		then int
	}{
		{"behind-12000", 7000}, {"behind-5000", 4700}, {"behind-300", 200}, {"behind-100", 100}, {"behind-0", 0},
	} {
		_, err := b.client.PutConsumer(ctx, step.name, client.ConsumerConfig{DeliverPolicy: "new"})
		require.NoError(t, err)
		if step.then > 0 {
			b.bulk(t, b.tenant, b.account, "webhook", "c", step.then, time.Now())
		}
	}
	for _, n := range []int64{0, 100, 300, 5000, 12000} {
		b.requirePending(t, fmt.Sprintf("behind-%d", n), n)
	}

	// Exactly 300 behind, through the view alone.
	_, err := b.client.PutConsumer(ctx, "three-hundred", client.ConsumerConfig{DeliverPolicy: "new"})
	require.NoError(t, err)
	b.bulk(t, b.tenant, b.account, "webhook", "c", 300, time.Now())
	view, _ := b.pendingTruth(t, b.tenant, "three-hundred")
	require.Equal(t, int64(300), view)
	_, err = b.client.PutConsumer(ctx, "none-behind", client.ConsumerConfig{DeliverPolicy: "new"})
	require.NoError(t, err)
	b.requirePending(t, "none-behind", 0)
}

// TestPendingThroughTheLifecycle: pending after pulls, acks, a nak (a
// redelivery waiting), an expiry, a seek, the ring's truncates, a fold of
// the counts, and a consumer deleted and created again.
func TestPendingThroughTheLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.bulk(t, b.tenant, b.account, "webhook", "c", 250, time.Now())
	_, err := b.client.PutConsumer(ctx, "c", client.ConsumerConfig{AckWait: client.Duration(3 * time.Second), MaxAckPending: 100000})
	require.NoError(t, err)
	b.requirePending(t, "c", 250)

	ds, err := b.client.Pull(ctx, "c", 100, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 100)
	b.requirePending(t, "c", 150) // leased ones are ack_pending
	res, err := b.client.Ack(ctx, "c", ds[0].DeliveryID, ds[1].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK && res[1].OK)
	b.requirePending(t, "c", 150)
	res, err = b.client.Nak(ctx, "c", time.Hour, ds[2].DeliveryID, ds[3].DeliveryID, ds[4].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	b.requirePending(t, "c", 153) // nak'd deliveries wait for redelivery

	// The rest of the batch expires (ack_wait 3 s): the next pull moves
	// them out and hands them out again.
	time.Sleep(3100 * time.Millisecond)
	again, err := b.client.Pull(ctx, "c", 1000, time.Second)
	require.NoError(t, err)
	require.Len(t, again, 95+150, "expired leases and the rest of the stream")
	ids := make([]uuid.UUID, len(again))
	for i, d := range again {
		ids[i] = d.DeliveryID
	}
	_, err = b.client.Ack(ctx, "c", ids...)
	require.NoError(t, err)
	b.requirePending(t, "c", 3)

	// The ring retires generations: positions move into the consumer's row.
	for range 6 {
		_, err := db.ConsumerRingStep(ctx, b.env.Pool, 0)
		require.NoError(t, err)
		view, truth := b.pendingTruth(t, b.tenant, "c")
		require.Equal(t, truth, view)
	}
	b.bulk(t, b.tenant, b.account, "webhook", "c", 40, time.Now())
	b.requirePending(t, "c", 43)
	_, err = db.StreamCountsFold(ctx, b.env.Pool)
	require.NoError(t, err)
	b.requirePending(t, "c", 43)
	ds, err = b.client.Pull(ctx, "c", 10, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 10)
	for range 6 {
		_, err := db.ConsumerRingStep(ctx, b.env.Pool, 0)
		require.NoError(t, err)
	}
	b.requirePending(t, "c", 33)

	// A seek back to the start: every message is unread again; the
	// deliveries waiting are dropped.
	_, err = b.svc.ConsumerSeek(ctx, b.tenant, "c", time.Now().Add(-time.Hour))
	require.NoError(t, err)
	b.requirePending(t, "c", 290)
	// A seek to the end.
	_, err = b.svc.ConsumerSeek(ctx, b.tenant, "c", time.Now().Add(time.Hour))
	require.NoError(t, err)
	b.requirePending(t, "c", 0)

	require.NoError(t, b.client.DeleteConsumer(ctx, "c"))
	_, err = b.client.PutConsumer(ctx, "c", client.ConsumerConfig{})
	require.NoError(t, err)
	b.requirePending(t, "c", 290)
}

// TestPendingDeliverPolicies: new counts what commits after the creation,
// all everything, by_start_time what was received from the start time on
// (an old start time: the counters; a recent one: row by row).
func TestPendingDeliverPolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.bulk(t, b.tenant, b.account, "webhook", "c", 70, time.Now().Add(-3*time.Hour))
	b.bulk(t, b.tenant, b.account, "webhook", "c", 30, time.Now().Add(-time.Hour))
	start := time.Now().Add(-2 * time.Hour)
	recent := time.Now().Add(-time.Minute)
	for name, cfg := range map[string]client.ConsumerConfig{
		"all":    {},
		"new":    {DeliverPolicy: "new"},
		"start":  {DeliverPolicy: "by_start_time", StartTime: &start},
		"recent": {DeliverPolicy: "by_start_time", StartTime: &recent},
	} {
		_, err := b.client.PutConsumer(ctx, name, cfg)
		require.NoError(t, err)
	}
	b.requirePending(t, "all", 100)
	b.requirePending(t, "new", 0)
	b.requirePending(t, "start", 30)
	b.requirePending(t, "recent", 0)
	b.bulk(t, b.tenant, b.account, "webhook", "c", 5, time.Now())
	b.requirePending(t, "all", 105)
	b.requirePending(t, "new", 5)
	b.requirePending(t, "start", 35)
	b.requirePending(t, "recent", 5)
	for _, name := range []string{"all", "start", "recent"} {
		ds, err := b.client.Pull(ctx, name, 1000, time.Second)
		require.NoError(t, err)
		require.NotEmpty(t, ds)
		b.requirePending(t, name, 0)
	}
}

// TestPendingFiltered: consumers filtered by channel type, by account and
// by conversation, ordered and unordered, and a filter changed on a
// consumer already reading.
func TestPendingFiltered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other, err := b.svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: b.tenant, ChannelType: "slack"})
	require.NoError(t, err)
	b.bulk(t, b.tenant, b.account, "webhook", "a", 120, time.Now())
	b.bulk(t, b.tenant, other.ID, "slack", "a", 80, time.Now())
	b.bulk(t, b.tenant, other.ID, "slack", "b", 45, time.Now())
	for name, cfg := range map[string]client.ConsumerConfig{
		"slack":        {Filter: client.ConsumerFilter{ChannelTypes: []string{"slack"}}},
		"account":      {Filter: client.ConsumerFilter{AccountIDs: []uuid.UUID{b.account}}},
		"conversation": {Filter: client.ConsumerFilter{ConversationIDs: []string{"b"}}},
		"ordered":      {Filter: client.ConsumerFilter{ChannelTypes: []string{"webhook"}}, Ordering: "conversation"},
		"both":         {Filter: client.ConsumerFilter{ChannelTypes: []string{"slack"}, AccountIDs: []uuid.UUID{other.ID}}},
	} {
		_, err := b.client.PutConsumer(ctx, name, cfg)
		require.NoError(t, err)
	}
	b.requirePending(t, "slack", 125)
	b.requirePending(t, "account", 120)
	b.requirePending(t, "conversation", 45)
	b.requirePending(t, "ordered", 120)
	b.requirePending(t, "both", 125)

	for name, want := range map[string]int64{"slack": 75, "account": 70, "conversation": 0, "both": 75} {
		ds, err := b.client.Pull(ctx, name, 50, time.Second)
		require.NoError(t, err)
		require.NotEmpty(t, ds)
		b.requirePending(t, name, want)
	}
	// An ordered consumer takes rows into its pending backlog and leases
	// one head per conversation: the backlog taken is still pending.
	ds, err := b.client.Pull(ctx, "ordered", 50, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	b.requirePending(t, "ordered", 119)

	// The filter changes: what it matches now and has not read.
	_, err = b.client.PutConsumer(ctx, "account", client.ConsumerConfig{Filter: client.ConsumerFilter{AccountIDs: []uuid.UUID{other.ID}}})
	require.NoError(t, err)
	b.requirePending(t, "account", 125)
	// Unfiltered now: the position has read past the first batch (its
	// transaction is older than the slack rows read), not the rest.
	_, err = b.client.PutConsumer(ctx, "slack", client.ConsumerConfig{})
	require.NoError(t, err)
	b.requirePending(t, "slack", 75)
}

// TestPendingConcurrentIngest: writers commit in shuffled order, some
// holding their transactions open, some in bulk, while pullers take and
// ack. Every check, at any moment, finds mio.queue_health's pending equal
// to the row-by-row count in the same snapshot; at the end it is 0.
func TestPendingConcurrentIngest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	other, err := b.svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: b.tenant, ChannelType: "slack"})
	require.NoError(t, err)
	names := []string{"all", "webhook", "other", "ordered"}
	cfgs := []client.ConsumerConfig{
		{}, {Filter: client.ConsumerFilter{ChannelTypes: []string{"webhook"}}},
		{Filter: client.ConsumerFilter{AccountIDs: []uuid.UUID{other.ID}}}, {Ordering: "conversation"},
	}
	for i, name := range names {
		cfgs[i].AckWait = client.Duration(5 * time.Minute)
		cfgs[i].MaxAckPending = 100000
		_, err := b.client.PutConsumer(ctx, name, cfgs[i])
		require.NoError(t, err)
	}

	var writers sync.WaitGroup
	for w := range 6 {
		writers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 11))
			for i := range 20 {
				err := db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
					account, conv := b.account, fmt.Sprint("c", r.IntN(5))
					if w%2 == 1 {
						account = other.ID
					}
					n := 1 + r.IntN(5)
					texts := make([]string, n)
					for k := range texts {
						texts[k] = "m"
					}
					if _, err := b.insertTx(tx, b.tenant, account, conv, texts...); err != nil {
						return err
					}
					if i%7 == 3 {
						time.Sleep(time.Duration(200+r.IntN(300)) * time.Millisecond)
					} else {
						time.Sleep(time.Duration(r.IntN(10)) * time.Millisecond)
					}
					return nil
				})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	writers.Go(func() { // bulk loads, and folds of the counts between them
		for range 5 {
			b.bulk(t, b.tenant, other.ID, "slack", "bulk", 200, time.Now())
			if _, err := db.StreamCountsFold(ctx, b.env.Pool); err != nil {
				t.Errorf("fold: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	writersDone := make(chan struct{})
	go func() { writers.Wait(); close(writersDone) }()

	stop := make(chan struct{})
	var pullers sync.WaitGroup
	for _, name := range names {
		for range 2 {
			pullers.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					ds, err := b.client.Pull(ctx, name, 50, 50*time.Millisecond)
					if err != nil {
						t.Errorf("pull %s: %v", name, err)
						return
					}
					ids := make([]uuid.UUID, len(ds))
					for i, d := range ds {
						ids[i] = d.DeliveryID
					}
					if len(ids) > 0 {
						if _, err := b.client.Ack(ctx, name, ids...); err != nil {
							t.Errorf("ack %s: %v", name, err)
							return
						}
					}
				}
			})
		}
	}
	checks := 0
	for done := false; !done; {
		select {
		case <-writersDone:
			done = true
		case <-time.After(30 * time.Millisecond):
		}
		for _, name := range names {
			view, truth := b.pendingTruth(t, b.tenant, name)
			require.Equal(t, truth, view, "consumer %s, check %d", name, checks)
			checks++
		}
	}
	// Drained: pending reaches 0 everywhere. The ordered consumer takes the
	// bulk conversation's 1,000 messages one pull and ack at a time (one
	// unacked delivery per conversation), so the drain lasts a thousand
	// round trips, whatever they take on the machine: the check fails
	// when the pending messages stop falling for 20 s, not at a deadline.
	low, since := int64(-1), time.Now()
	for {
		var sum int64
		for _, name := range names {
			view, _ := b.pendingTruth(t, b.tenant, name)
			sum += view
		}
		if sum == 0 {
			break
		}
		if low < 0 || sum < low {
			low, since = sum, time.Now()
		}
		require.Less(t, time.Since(since), 20*time.Second, "%d messages stay pending", sum)
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	pullers.Wait()
	for _, name := range names {
		b.requirePending(t, name, 0)
	}
}

// TestPendingRetention: retention removes messages a consumer has not
// read (a day partition retired whole, archived rows pruned one by one);
// its pending drops by exactly those, and stays exact after.
func TestPendingRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	day := time.Now().Add(-10 * 24 * time.Hour)
	_, err := db.InboxPartitionsEnsure(ctx, b.env.Pool, day, day)
	require.NoError(t, err)
	other, err := b.svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: b.tenant, ChannelType: "slack"})
	require.NoError(t, err)
	b.bulk(t, b.tenant, b.account, "webhook", "old", 60, day)
	b.bulk(t, b.tenant, other.ID, "slack", "old", 40, day)
	b.bulk(t, b.tenant, b.account, "webhook", "new", 25, time.Now())
	for name, cfg := range map[string]client.ConsumerConfig{
		"all":      {},
		"slack":    {Filter: client.ConsumerFilter{ChannelTypes: []string{"slack"}}},
		"conv":     {Filter: client.ConsumerFilter{ConversationIDs: []string{"old"}}},
		"received": {Stage: "received"},
		"read":     {},
	} {
		_, err := b.client.PutConsumer(ctx, name, cfg)
		require.NoError(t, err)
	}
	// "all" reads 30 (of the old day's), "read" reads everything.
	ds, err := b.client.Pull(ctx, "all", 30, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 30)
	ds, err = b.client.Pull(ctx, "read", 1000, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 125)
	b.requirePending(t, "all", 95)
	b.requirePending(t, "read", 0)

	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
INSERT INTO mio.archive_cursors (tenant_id, log_lo) VALUES ($1, pg_current_snapshot())
ON CONFLICT (tenant_id) DO UPDATE SET log_lo = excluded.log_lo, log_hi = NULL, ready_xid = '0', ready_seq = 0`, b.tenant)
		return err
	}))
	r, ok, err := db.InboxPartitionRetire(ctx, b.env.Pool, time.Now().Add(-7*24*time.Hour))
	require.NoError(t, err)
	require.True(t, ok, "the old day is retired")
	require.Equal(t, db.InboxPartitionName(day), r.Name)
	b.requirePending(t, "all", 25)
	b.requirePending(t, "slack", 0)
	b.requirePending(t, "conv", 0)
	b.requirePending(t, "received", 25)
	b.requirePending(t, "read", 0)

	// Rows pruned one by one (the default partition: ids that are not
	// UUIDv7 of a day, received long ago).
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, conversation_id, source_message_id, state, envelope,
                       received_at, ready_xid, ready_seq, ready_at)
SELECT $1, gen_random_uuid(), $2, 'webhook', 'old', 'default-' || g, 'ready', '{}', now() - interval '30 days',
       pg_current_xact_id(), nextval('mio.inbox_ready_seq'), now()
FROM generate_series(1, 17) AS g`, b.tenant, b.account)
		return err
	}))
	b.requirePending(t, "all", 42)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE mio.archive_cursors SET log_lo = pg_current_snapshot(), log_hi = NULL WHERE tenant_id = $1`, b.tenant)
		return err
	}))
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		n, err := db.InboxArchivedPrune(ctx, tx, b.tenant, time.Now().Add(-7*24*time.Hour), 1000)
		require.Equal(t, int64(17), n)
		return err
	}))
	b.requirePending(t, "all", 25)
	b.requirePending(t, "conv", 0)
	b.requirePending(t, "received", 25)
	ds, err = b.client.Pull(ctx, "all", 1000, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 25)
	b.requirePending(t, "all", 0)
}

// TestPendingMadeReady: messages received with attachments to settle are
// on the received stage at once and join the ready stage when the enrich
// worker settles them (an UPDATE): each stage's consumers count them then.
func TestPendingMadeReady(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for name, stage := range map[string]string{"ready": "ready", "received": "received"} {
		_, err := b.client.PutConsumer(ctx, name, client.ConsumerConfig{Stage: stage})
		require.NoError(t, err)
	}
	rows := make([]db.InboxRow, 7)
	for i := range rows {
		id := uuid.Must(uuid.NewV7())
		rows[i] = db.InboxRow{ID: id, AccountID: b.account, ChannelType: "webhook", SourceMessageID: id.String(),
			ConversationID: "c", State: db.InboxReceived, Envelope: []byte(`{"text":"with a file"}`), ReceivedAt: time.Now()}
	}
	var ids []uuid.UUID
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		var err error
		ids, err = db.InboxInsertBatch(ctx, tx, b.tenant, rows)
		return err
	}))
	require.Len(t, ids, 7)
	b.requirePending(t, "ready", 0)
	b.requirePending(t, "received", 7)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		for _, id := range ids[:5] {
			ok, err := db.InboxSettle(ctx, tx, b.tenant, id, []byte(`{"text":"settled"}`))
			if err != nil || !ok {
				return fmt.Errorf("settle %s: %v %v", id, ok, err)
			}
		}
		return nil
	}))
	b.requirePending(t, "ready", 5)
	b.requirePending(t, "received", 7)
	ds, err := b.client.Pull(ctx, "ready", 100, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 5)
	b.requirePending(t, "ready", 0)
	ds, err = b.client.Pull(ctx, "received", 4, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 4)
	b.requirePending(t, "received", 3)
	ds, err = b.client.Pull(ctx, "received", 100, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 3)
	b.requirePending(t, "received", 0)
}

// TestPendingPreviousRelease: while the pods roll, a process of the
// previous release takes with the old take's arguments (the counters stay
// exact) or appends a position without a taken count (an ordered
// consumer's advance); CALL mio.consumers_rebase() makes pending exact.
func TestPendingPreviousRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.bulk(t, b.tenant, b.account, "webhook", "c", 90, time.Now())
	_, err := b.client.PutConsumer(ctx, "old-take", client.ConsumerConfig{})
	require.NoError(t, err)
	_, err = b.client.PutConsumer(ctx, "old-advance", client.ConsumerConfig{Ordering: "conversation"})
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM mio.consumers WHERE tenant_id = $1 FOR NO KEY UPDATE`, b.tenant); err != nil {
			return err
		}
		// The previous release's take: 16 arguments.
		_, err := tx.Exec(ctx, `
SELECT count(*) FROM mio.consumer_state AS s,
LATERAL mio.consumer_take_ready(s.tenant_id, s.log_lo, pg_current_snapshot(), s.cursor_xid, s.cursor_seq, '{}', '{}', '{}', NULL,
    30, s.name, interval '1 minute', s.swept, false, s.last_delivered_at, false) AS t
WHERE s.tenant_id = $1 AND s.name = 'old-take'`, b.tenant)
		if err != nil {
			return err
		}
		// The previous release's ConsumerAdvance: no taken (the window read
		// to its end, as if 90 rows went into the pending backlog).
		_, err = tx.Exec(ctx, `
INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at)
SELECT $1, 'old-advance', g.gen, pg_current_snapshot(), NULL, '0', 0, 0, now() FROM mio.consumer_log_gen AS g`, b.tenant)
		return err
	}))
	b.requirePending(t, "old-take", 60)
	view, truth := b.pendingTruth(t, b.tenant, "old-advance")
	require.Equal(t, int64(0), truth)
	require.Equal(t, int64(90), view, "not exact before the rebase")
	_, err = b.env.Pool.Exec(ctx, "CALL mio.consumers_rebase()")
	require.NoError(t, err)
	b.requirePending(t, "old-advance", 0)
	b.requirePending(t, "old-take", 60)
}

// TestCountsFold: the fold loop leaves one delta row per key, and pending
// does not move.
func TestCountsFold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "c", client.ConsumerConfig{})
	require.NoError(t, err)
	for range 5 {
		b.insert(t, b.tenant, b.account, "c", "a", "b")
	}
	rows := func() (n int) {
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM mio.stream_counts WHERE tenant_id = $1 AND stage = 'ready'`, b.tenant).Scan(&n)
		}))
		return n
	}
	require.Equal(t, 5, rows(), "a delta row per commit")
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		consume.New(b.env.Pool, nil, nil, nil, consume.Options{}).RunCountsFold(fctx, 20*time.Millisecond)
	}()
	require.Eventually(t, func() bool { return rows() == 1 }, 10*time.Second, 20*time.Millisecond)
	cancel()
	<-done
	b.requirePending(t, "c", 10)
}
