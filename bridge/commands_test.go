package bridge_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/bridge"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/migrations"
	"github.com/miohq/mio/outbox"
)

// Commands over NATS enter the outbox like POST /v1/outbound: a valid one
// is answered with its id and its acceptance is published; a duplicate
// gets the same id; an invalid one or another tenant's account gets an
// error and writes nothing.
func TestOutboundCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	other := b.otherTenant(t)
	rc, err := river.NewClient(riverpgxv5.New(b.env.Pool), &river.Config{Schema: migrations.RiverSchema})
	require.NoError(t, err)
	br, _ := b.newBridge(t, bridge.Config{})
	run(t, br)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = br.ServeCommands(cctx, outbox.New(b.env.Pool, rc)) }()
	client := b.connect(t)

	send := func(tenant, account, key, body string) bridge.CommandReply {
		t.Helper()
		m := nats.NewMsg(bridge.SubjectOutboundCmd + "." + account)
		m.Header.Set(bridge.HeaderTenantID, tenant)
		if key != "" {
			m.Header.Set(nats.MsgIdHdr, key)
		}
		m.Data = []byte(body)
		var resp *nats.Msg
		require.Eventually(t, func() bool { // until the subscription is up
			resp, err = client.RequestMsg(m, 2*time.Second)
			return err == nil
		}, 10*time.Second, 10*time.Millisecond)
		var r bridge.CommandReply
		require.NoError(t, json.Unmarshal(resp.Data, &r), "%s", resp.Data)
		return r
	}
	tenant, account := b.tenant.String(), b.account.String()
	body := `{"conversation_id":"c.1 >","text":"hi"}`

	ok := send(tenant, account, "k1", body)
	require.Nil(t, ok.Error)
	require.Equal(t, db.HandoffQueued, ok.HandoffState)
	again := send(tenant, account, "k1", body)
	require.Nil(t, again.Error)
	require.Equal(t, ok.ID, again.ID)
	require.True(t, again.Replayed)

	conflict := send(tenant, account, "k1", `{"conversation_id":"c.1 >","text":"other"}`)
	require.Equal(t, "conflict", conflict.Error.Code)
	for name, r := range map[string]bridge.CommandReply{
		"no text":          send(tenant, account, "k2", `{"conversation_id":"c"}`),
		"unknown field":    send(tenant, account, "k3", `{"conversation_id":"c","text":"x","nope":1}`),
		"other account":    send(tenant, account, "k4", `{"account_id":"`+other.account.String()+`","conversation_id":"c","text":"x"}`),
		"other tenant's":   send(tenant, other.account.String(), "k5", `{"conversation_id":"c","text":"x"}`),
		"no tenant header": send("", account, "k6", body),
		"key mismatch":     send(tenant, account, "k7", `{"idempotency_key":"k8","conversation_id":"c","text":"x"}`),
	} {
		require.NotNil(t, r.Error, name)
		require.Equal(t, "bad_request", r.Error.Code, name)
	}
	var rows int
	require.NoError(t, b.env.OwnerPool(t).QueryRow(ctx, "SELECT count(*) FROM mio.outbox").Scan(&rows))
	require.Equal(t, 1, rows, "only the valid command wrote")

	// Its acceptance is published on mio.outbound with the send's lane.
	b.waitMsgs(t, bridge.DefaultStream, 1)
	ids, subjects, _ := b.streamMsgs(t, bridge.DefaultStream)
	require.Equal(t, []string{bridge.Subject(bridge.SubjectOutbound, "webhook", account, "c.1 >", ok.ID.String())}, subjects)
	for id := range ids {
		require.Contains(t, id, "outbound:"+ok.ID.String()+":")
	}
}
