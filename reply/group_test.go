package reply_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/reply"
	"github.com/miohq/mio/workers"
)

// groupBundle is a second tenant beside setup's, and a reply.Service of
// its own on the same database.
type groupBundle struct {
	*testBundle
	other   *testBundle // the second tenant: same database, own client
	replies *reply.Service
}

func setupGroup(t *testing.T) *groupBundle {
	t.Helper()
	ctx := context.Background()
	b := setup(t)
	svc := admin.New(b.env.Pool, nil, "http://x")
	tn, _, err := svc.TenantCreate(ctx, "t2")
	require.NoError(t, err)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "webhook"})
	require.NoError(t, err)
	token, _, err := svc.TokenCreate(ctx, tn.ID, "agent", []db.Role{db.RoleConsume, db.RoleProduce})
	require.NoError(t, err)
	other := *b
	other.tenant, other.account, other.token = tn.ID, acct.ID, token
	other.client = client.New(b.srv.URL, token)

	river, err := workers.NewClient(b.env.Pool, nil, workers.Config{})
	require.NoError(t, err)
	replies := reply.New(b.env.Pool, consume.New(b.env.Pool, nil, nil, nil, consume.Options{}), outbox.New(b.env.Pool, river))
	return &groupBundle{testBundle: b, other: &other, replies: replies}
}

// pullN pulls n deliveries of consumer.
func (b *testBundle) pullN(t *testing.T, consumer string, n int) []client.Delivery {
	t.Helper()
	ds, err := b.client.Pull(context.Background(), consumer, n, 5*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, n)
	return ds
}

// TestGroupCommitReplies: one group of two tenants and three consumers —
// live leases of lease ranges and of a redelivery, a settled lease, one
// delivery answered twice — commits each live reply with its ack in one
// transaction and answers the rest on their own.
func TestGroupCommitReplies(t *testing.T) {
	t.Parallel()
	b := setupGroup(t)
	ctx := context.Background()
	for _, c := range []struct {
		b    *testBundle
		name string
	}{{b.testBundle, "agent"}, {b.testBundle, "audit"}, {b.other, "agent"}} {
		_, err := c.b.client.PutConsumer(ctx, c.name, client.ConsumerConfig{})
		require.NoError(t, err)
	}
	b.insert(t, "conv-a", "th-1", "a1", "a2", "a3", "a4")
	b.other.insert(t, "conv-b", "", "b1", "b2")
	agent := b.pullN(t, "agent", 4)
	audit := b.pullN(t, "audit", 4)
	other := b.other.pullN(t, "agent", 2)
	// other[1] is redelivered under a random id.
	_, err := b.other.client.Nak(ctx, "agent", 0, other[1].DeliveryID)
	require.NoError(t, err)
	redelivered := b.other.pullOne(t, "agent")
	// agent[3] is settled before its reply.
	_, err = b.client.Ack(ctx, "agent", agent[3].DeliveryID)
	require.NoError(t, err)

	cmd := func(key string) envelope.SendCommand {
		return envelope.SendCommand{IdempotencyKey: key, Text: "re " + key}
	}
	reqs := []reply.Request{
		{TenantID: b.tenant, Consumer: "agent", DeliveryID: agent[0].DeliveryID, Cmd: cmd("a0")},
		{TenantID: b.other.tenant, Consumer: "agent", DeliveryID: other[0].DeliveryID, Cmd: cmd("b0")},
		{TenantID: b.tenant, Consumer: "audit", DeliveryID: audit[0].DeliveryID, Cmd: cmd("u0")},
		{TenantID: b.tenant, Consumer: "agent", DeliveryID: agent[1].DeliveryID, Cmd: cmd("a1")},
		{TenantID: b.tenant, Consumer: "agent", DeliveryID: agent[3].DeliveryID, Cmd: cmd("a3")},                       // settled
		{TenantID: b.other.tenant, Consumer: "agent", DeliveryID: redelivered.DeliveryID, Cmd: cmd("b1")},              // redelivery
		{TenantID: b.tenant, Consumer: "agent", DeliveryID: agent[1].DeliveryID, Cmd: cmd("a1")},                       // twice
		{TenantID: b.tenant, Consumer: "audit", DeliveryID: audit[1].DeliveryID, Cmd: envelope.SendCommand{Text: "x"}}, // no key: lease
	}
	// The last one has no idempotency key: refused by the send after its
	// ack — the group fails as a whole and nothing of it is written.
	_, err = b.replies.CommitGroup(ctx, reqs)
	var ve *outbox.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, [3]int{0, 0, 9}, b.counts(t), "nothing written by the failed group (9 live leases)")

	ans, err := b.replies.CommitGroup(ctx, reqs[:7])
	require.NoError(t, err)
	for _, i := range []int{0, 1, 2, 3, 5} {
		require.NoError(t, ans[i].Err, "reply %d", i)
		require.Equal(t, db.HandoffQueued, ans[i].Sent.HandoffState)
		require.False(t, ans[i].Sent.Replayed)
	}
	require.ErrorIs(t, ans[4].Err, reply.ErrLeaseLost, "settled before")
	require.ErrorIs(t, ans[6].Err, reply.ErrLeaseLost, "the same delivery is acknowledged once")

	var conv, thread string
	var tenant uuid.UUID
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT tenant_id, conversation_id, coalesce(thread_id, '') FROM mio.outbox WHERE id = $1`,
		ans[0].Sent.ID).Scan(&tenant, &conv, &thread))
	require.Equal(t, [3]any{b.tenant, "conv-a", "th-1"}, [3]any{tenant, conv, thread}, "routing defaults from the delivered message")
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT tenant_id, conversation_id FROM mio.outbox WHERE id = $1`,
		ans[5].Sent.ID).Scan(&tenant, &conv))
	require.Equal(t, [2]any{b.other.tenant, "conv-b"}, [2]any{tenant, conv})
	// Live: agent[2], audit[1..3] of the first tenant; nothing of t2. Five
	// replies, two dispatch jobs: the first tenant's four (one account, one
	// transaction) share one, the other tenant's has its own.
	require.Equal(t, [3]int{5, 2, 4}, b.counts(t))

	// Through Reply, the lost ones are answered as an HTTP client sees them:
	// the twice-answered delivery by its first reply, the settled one 409.
	again, err := b.replies.Reply(ctx, b.tenant, "agent", agent[1].DeliveryID, cmd("a1"))
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, ans[3].Sent.ID, again.ID)
	_, err = b.replies.Reply(ctx, b.tenant, "agent", agent[3].DeliveryID, cmd("a3"))
	require.ErrorIs(t, err, reply.ErrLeaseLost)
	_, err = b.replies.Reply(ctx, b.tenant, "nobody", agent[2].DeliveryID, cmd("n"))
	require.ErrorIs(t, err, consume.ErrNotFound)
	require.Equal(t, [3]int{5, 2, 4}, b.counts(t))
}

// TestGroupCommitRepliesConcurrent: replies sent at once under group
// commit (a wide window gathers them) — one with a bad command among
// them — each get their own answer, and exactly the good ones commit
// with their acks.
func TestGroupCommitRepliesConcurrent(t *testing.T) {
	t.Parallel()
	b := setupGroup(t)
	ctx := context.Background()
	var sizes []int
	var mu sync.Mutex
	stop := b.replies.StartGroupCommit(groupcommit.Config{Window: 50 * time.Millisecond, Flushers: 1,
		OnBatch: func(n int, _ time.Duration) { mu.Lock(); sizes = append(sizes, n); mu.Unlock() }})
	defer stop()
	_, err := b.client.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)
	const n = 24
	texts := make([]string, n)
	for i := range texts {
		texts[i] = "m"
	}
	b.insert(t, "c", "", texts...)
	ds := b.pullN(t, "agent", n)

	errs := make([]error, n)
	sent := make([]*outbox.Sent, n)
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := envelope.SendCommand{IdempotencyKey: d.DeliveryID.String(), Text: "ok"}
			if i == 7 {
				cmd.Text = "" // refused: nothing to send
			}
			sent[i], errs[i] = b.replies.Reply(ctx, b.tenant, "agent", d.DeliveryID, cmd)
		}()
	}
	wg.Wait()
	ids := map[uuid.UUID]bool{}
	for i := range ds {
		if i == 7 {
			var ve *outbox.ValidationError
			require.ErrorAs(t, errs[i], &ve)
			continue
		}
		require.NoError(t, errs[i], "reply %d", i)
		ids[sent[i].ID] = true
	}
	require.Len(t, ids, n-1)
	require.Equal(t, [3]int{n - 1, n - 1, 1}, b.counts(t), "the refused reply's lease is still live")
	t.Logf("group sizes: %v", sizes)
}
