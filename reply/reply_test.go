package reply_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/workers"
)

type testBundle struct {
	env     *dbtest.Env
	owner   *pgxpool.Pool
	srv     *httptest.Server
	tenant  uuid.UUID
	account uuid.UUID
	token   string // consume + produce
	consume string // consume only
	client  *client.Client
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	b := &testBundle{env: dbtest.New(t)}
	b.owner = b.env.OwnerPool(t)
	svc := admin.New(b.env.Pool, nil, "http://x")
	river, err := workers.NewClient(b.env.Pool, nil, workers.Config{})
	require.NoError(t, err)
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), Outbox: outbox.New(b.env.Pool, river),
		Consumers: consume.New(b.env.Pool, nil, nil, nil, consume.Options{MaxPoll: 20 * time.Millisecond})})
	b.srv = httptest.NewServer(api.PublicHandler())
	t.Cleanup(b.srv.Close)
	tn, _, err := svc.TenantCreate(ctx, "t")
	require.NoError(t, err)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "webhook"})
	require.NoError(t, err)
	b.tenant, b.account = tn.ID, acct.ID
	b.token, _, err = svc.TokenCreate(ctx, tn.ID, "agent", []db.Role{db.RoleConsume, db.RoleProduce})
	require.NoError(t, err)
	b.consume, _, err = svc.TokenCreate(ctx, tn.ID, "reader", []db.Role{db.RoleConsume})
	require.NoError(t, err)
	b.client = client.New(b.srv.URL, b.token)
	return b
}

// insert commits one message per text in conversation conv (thread th).
func (b *testBundle) insert(t *testing.T, conv, th string, texts ...string) {
	t.Helper()
	rows := make([]db.InboxRow, len(texts))
	for i, text := range texts {
		id := uuid.Must(uuid.NewV7())
		env, _ := json.Marshal(envelope.Message{ID: id, TenantID: b.tenant, AccountID: b.account, ChannelType: "webhook",
			SourceMessageID: id.String(), Conversation: envelope.Conversation{ID: conv, Type: "dm"}, ThreadID: th, Text: text,
			Attachments: []envelope.Attachment{}})
		rows[i] = db.InboxRow{ID: id, AccountID: b.account, ChannelType: "webhook", SourceMessageID: id.String(),
			ConversationID: conv, State: db.InboxReady, Envelope: env, ReceivedAt: time.Now()}
	}
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.InboxInsertBatch(context.Background(), tx, b.tenant, rows)
		return err
	}))
}

// counts returns outbox rows, dispatch jobs and live leases (ranges'
// outstanding members plus per-message leases).
func (b *testBundle) counts(t *testing.T) [3]int {
	t.Helper()
	var c [3]int
	require.NoError(t, b.owner.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM mio.outbox),
		(SELECT count(*) FROM river.river_job WHERE kind = 'mio.dispatch'),
		(SELECT coalesce(sum(cardinality(r.message_ids)), 0) FROM mio.consumer_leases AS r)
		  - (SELECT coalesce(sum(cardinality(s.idxs)), 0) FROM mio.consumer_settles AS s)
		  + (SELECT count(*) FROM mio.consumer_deliveries WHERE state = 'leased')`).Scan(&c[0], &c[1], &c[2]))
	return c
}

func (b *testBundle) post(t *testing.T, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	return resp.StatusCode, m
}

func (b *testBundle) pullOne(t *testing.T, consumer string) client.Delivery {
	t.Helper()
	ds, err := b.client.Pull(context.Background(), consumer, 1, 5*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	return ds[0]
}

// TestReplyAcksAndSends: a reply acks the delivery and queues the answer
// in the delivered message's account, conversation and thread; a replay
// answers the same id and writes nothing.
func TestReplyAcksAndSends(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)
	b.insert(t, "conv-1", "thread-9", "hello")
	d := b.pullOne(t, "agent")
	require.Equal(t, [3]int{0, 0, 1}, b.counts(t))

	cmd := envelope.SendCommand{IdempotencyKey: "reply:" + d.Message.ID.String(), Text: "hi back"}
	sent, err := b.client.Reply(ctx, "agent", d.DeliveryID, cmd)
	require.NoError(t, err)
	require.Equal(t, "queued", sent.HandoffState)
	require.Equal(t, [3]int{1, 1, 0}, b.counts(t), "outbox row, dispatch job, lease gone")
	var acct uuid.UUID
	var conv, thread string
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT account_id, conversation_id, coalesce(thread_id, '') FROM mio.outbox WHERE id = $1`,
		sent.ID).Scan(&acct, &conv, &thread))
	require.Equal(t, b.account, acct)
	require.Equal(t, "conv-1", conv)
	require.Equal(t, "thread-9", thread)

	again, err := b.client.Reply(ctx, "agent", d.DeliveryID, cmd)
	require.NoError(t, err, "a replay after the lease is gone answers the first reply")
	require.Equal(t, sent.ID, again.ID)
	require.Equal(t, [3]int{1, 1, 0}, b.counts(t))

	cmd.Text = "something else"
	_, err = b.client.Reply(ctx, "agent", d.DeliveryID, cmd)
	var ae *client.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 409, ae.Status, "same key, different command")
	require.Equal(t, [3]int{1, 1, 0}, b.counts(t))
}

// TestReplyLeaseLost: a settled, expired or forged lease is 409
// lease_lost and nothing is written; a bad command leaves the lease live.
func TestReplyLeaseLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)
	b.insert(t, "c", "", "one", "two", "three")
	ds, err := b.client.Pull(ctx, "agent", 3, 5*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 3)

	// Settled.
	_, err = b.client.Ack(ctx, "agent", ds[0].DeliveryID)
	require.NoError(t, err)
	_, err = b.client.Reply(ctx, "agent", ds[0].DeliveryID, envelope.SendCommand{IdempotencyKey: "k0", Text: "x"})
	require.True(t, client.IsLeaseLost(err), "%v", err)

	// Forged: another member's tag.
	forged := ds[1].DeliveryID
	forged[15] ^= 1
	_, err = b.client.Reply(ctx, "agent", forged, envelope.SendCommand{IdempotencyKey: "k1", Text: "x"})
	require.True(t, client.IsLeaseLost(err), "%v", err)

	// A bad command: 400, the lease is still live.
	_, err = b.client.Reply(ctx, "agent", ds[1].DeliveryID, envelope.SendCommand{IdempotencyKey: "k1"})
	var ae *client.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 400, ae.Status)
	require.Equal(t, [3]int{0, 0, 2}, b.counts(t))

	// Expired (moved by SQL, no waiting).
	_, err = b.owner.Exec(ctx, `UPDATE mio.consumer_leases SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
	_, err = b.client.Reply(ctx, "agent", ds[1].DeliveryID, envelope.SendCommand{IdempotencyKey: "k1", Text: "late"})
	require.True(t, client.IsLeaseLost(err), "%v", err)
	require.Equal(t, 0, b.counts(t)[0], "nothing written")

	// Unknown consumer: 404.
	_, err = b.client.Reply(ctx, "nobody", ds[2].DeliveryID, envelope.SendCommand{IdempotencyKey: "k2", Text: "x"})
	require.True(t, client.IsNotFound(err), "%v", err)
}

// TestOutboundWithAck: POST /v1/outbound with "ack" does the same; the
// roles consume and produce are both needed; unknown fields are refused.
func TestOutboundWithAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)
	b.insert(t, "c", "", "one")
	d := b.pullOne(t, "agent")

	body := fmt.Sprintf(`{"idempotency_key":"o1","text":"hi","ack":{"consumer":"agent","delivery_id":%q}}`, d.DeliveryID)
	status, m := b.post(t, "/v1/consumers/agent/reply", b.consume, fmt.Sprintf(`{"delivery_id":%q,"idempotency_key":"o1","text":"hi"}`, d.DeliveryID))
	require.Equal(t, 403, status, m)
	status, m = b.post(t, "/v1/outbound", b.token, `{"idempotency_key":"o1","text":"hi","ack":{"consumer":"agent","delivery_id":"x"}}`)
	require.Equal(t, 400, status, m)
	status, m = b.post(t, "/v1/consumers/agent/reply", b.token, fmt.Sprintf(`{"delivery_id":%q,"idempotency_key":"o1","text":"hi","colour":1}`, d.DeliveryID))
	require.Equal(t, 400, status, m)
	require.Equal(t, [3]int{0, 0, 1}, b.counts(t))

	status, m = b.post(t, "/v1/outbound", b.token, body)
	require.Equal(t, 202, status, m)
	id := m["id"]
	require.Equal(t, [3]int{1, 1, 0}, b.counts(t))
	status, m = b.post(t, "/v1/outbound", b.token, body)
	require.Equal(t, 200, status, m)
	require.Equal(t, id, m["id"])

	b.insert(t, "c", "", "two")
	d = b.pullOne(t, "agent")
	_, err = b.client.Ack(ctx, "agent", d.DeliveryID)
	require.NoError(t, err)
	status, m = b.post(t, "/v1/outbound", b.token, fmt.Sprintf(`{"idempotency_key":"o2","text":"hi","ack":{"consumer":"agent","delivery_id":%q}}`, d.DeliveryID))
	require.Equal(t, 409, status, m)
	require.Equal(t, "lease_lost", m["error"].(map[string]any)["code"])
}

// TestReplyRedelivered: a delivery redelivered (random id) is answered
// like a first one.
func TestReplyRedelivered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)
	b.insert(t, "c", "", "one")
	d := b.pullOne(t, "agent")
	_, err = b.client.Nak(ctx, "agent", 0, d.DeliveryID)
	require.NoError(t, err)
	d2 := b.pullOne(t, "agent")
	require.Equal(t, 2, d2.DeliveryCount)
	_, err = b.client.Reply(ctx, "agent", d.DeliveryID, envelope.SendCommand{IdempotencyKey: "r", Text: "x"})
	require.True(t, client.IsLeaseLost(err), "the old id: %v", err)
	_, err = b.client.Reply(ctx, "agent", d2.DeliveryID, envelope.SendCommand{IdempotencyKey: "r", Text: "x"})
	require.NoError(t, err)
	require.Equal(t, [3]int{1, 1, 0}, b.counts(t))
}
