package bridge_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/bridge"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// A message with attachments to fetch is published on mio.inbound when it
// commits and on mio.inbound_enriched, with its settled envelope, once it
// becomes ready.
func TestInboundEnrichedOnceReady(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	rows := b.rows(1)
	rows[0].State = db.InboxReceived
	id := b.insert(t, rows)[0]
	br, _ := b.newBridge(t, bridge.Config{})
	run(t, br)
	b.waitMsgs(t, bridge.DefaultStream, 1)
	got, _, _ := b.streamMsgs(t, bridge.DefaultStream)
	require.Equal(t, map[string]int{bridge.MsgID(db.BridgeInbound, id.String()): 1}, got)

	var settled envelope.Message
	require.NoError(t, json.Unmarshal(rows[0].Envelope, &settled))
	settled.Text = "settled"
	env, err := json.Marshal(&settled)
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		ok, err := db.InboxSettle(ctx, tx, b.tenant, id, env)
		require.True(t, ok)
		return err
	}))
	checkExactlyOnce(t, b, []uuid.UUID{id})
	_, subjects, _ := b.streamMsgs(t, bridge.DefaultStream)
	require.Equal(t, bridge.InboundSubject(bridge.SubjectInboundEnriched, "webhook", b.account, "c1", id), subjects[1])
	js, err := jetstream.New(b.connect(t))
	require.NoError(t, err)
	s, err := js.Stream(ctx, bridge.DefaultStream)
	require.NoError(t, err)
	m, err := s.GetMsg(ctx, 2)
	require.NoError(t, err)
	var msg envelope.Message
	require.NoError(t, json.Unmarshal(m.Data, &msg))
	require.Equal(t, "settled", msg.Text)
	require.Equal(t, id, msg.ID)
	require.JSONEq(t, `{"k":1}`, string(msg.Raw), "raw is included as GET /v1/messages/{id} shows it")
}

// Every transition of either state machine is published on
// mio.outbound_status, after the acceptance on mio.outbound, in order.
func TestOutboundStatusEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	owner := b.env.OwnerPool(t)
	var out uuid.UUID
	require.NoError(t, owner.QueryRow(ctx, `
		WITH o AS (
			INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key, request_sha256, text)
			VALUES ($1, gen_random_uuid(), $2, 'webhook', 'c*1', 'k', '\x00', 'hi') RETURNING id)
		INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
		SELECT $1, o.id, 'queued', 'handoff', 'queued', 1 FROM o RETURNING outbox_id`, b.tenant, b.account).Scan(&out))
	br, _ := b.newBridge(t, bridge.Config{})
	run(t, br)
	b.waitMsgs(t, bridge.DefaultStream, 1)
	for _, ev := range [][3]string{{"sending", "handoff", "sending"}, {"handed_off", "handoff", "handed_off"}, {"delivered", "provider", "delivered"}} {
		_, err := owner.Exec(ctx, `INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
			VALUES ($1, $2, $3, $4, $5, 1, '{"n":1}')`, b.tenant, out, ev[0], ev[1], ev[2])
		require.NoError(t, err)
	}
	b.waitMsgs(t, bridge.DefaultStream, 4)
	ids, subjects, _ := b.streamMsgs(t, bridge.DefaultStream)
	require.Len(t, ids, 4)
	require.Equal(t, bridge.Subject(bridge.SubjectOutbound, "webhook", b.account.String(), "c*1", out.String()), subjects[0])
	for _, s := range subjects[1:] {
		require.Equal(t, bridge.Subject(bridge.SubjectOutboundStatus, "webhook", b.account.String(), "c*1", out.String()), s)
	}
	js, err := jetstream.New(b.connect(t))
	require.NoError(t, err)
	s, err := js.Stream(ctx, bridge.DefaultStream)
	require.NoError(t, err)
	var states []string
	var prev int64
	for seq := uint64(1); seq <= 4; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		var e bridge.OutboundEvent
		require.NoError(t, json.Unmarshal(m.Data, &e))
		require.Equal(t, out, e.ID)
		require.Equal(t, "k", e.IdempotencyKey, "the payload is the send as GET /v1/outbound/{id} shows it")
		require.Equal(t, "hi", e.Text)
		require.GreaterOrEqual(t, len(e.Events), int(seq), "with its timeline up to (at least) this event")
		require.Greater(t, e.Transition.Seq, prev)
		prev = e.Transition.Seq
		states = append(states, e.Transition.State)
		if seq == 4 {
			// The whole payload is GET's answer plus the transition.
			var got map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(m.Data, &got))
			delete(got, "transition")
			sends, err := db.BridgeOutboxSends(ctx, owner, b.tenant, []uuid.UUID{out})
			require.NoError(t, err)
			want, err := json.Marshal(outbox.ViewOf(sends[out].Outbound, sends[out].Events))
			require.NoError(t, err)
			gotJSON, err := json.Marshal(got)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(gotJSON))
			require.JSONEq(t, `{"n":1}`, string(e.Transition.Detail))
		}
	}
	require.Equal(t, []string{"queued", "sending", "handed_off", "delivered"}, states)
}
