package consume_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
)

func (b *testBundle) raw(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "c", client.ConsumerConfig{})
	require.NoError(t, err)
	b.insert(t, b.tenant, b.account, "conv", "x")

	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		reason                   string
	}{
		{"UnknownFieldPut", "PUT", "/v1/consumers/c2", `{"bogus":1}`, 400, "unknown field"},
		{"UnknownFieldPull", "POST", "/v1/consumers/c/pull", `{"batch":1,"extra":true}`, 400, "unknown field"},
		{"BatchZero", "POST", "/v1/consumers/c/pull", `{"batch":0}`, 400, "batch"},
		{"BatchHuge", "POST", "/v1/consumers/c/pull", `{"batch":5000}`, 400, "batch"},
		{"WaitHour", "POST", "/v1/consumers/c/pull", `{"wait":"3600s"}`, 400, "wait"},
		{"WaitNotDuration", "POST", "/v1/consumers/c/pull", `{"wait":30}`, 400, "duration"},
		{"MalformedIDs", "POST", "/v1/consumers/c/ack", `{"delivery_ids":["nope"]}`, 400, "invalid"},
		{"NoIDs", "POST", "/v1/consumers/c/ack", `{"delivery_ids":[]}`, 400, "delivery_ids"},
		{"DelayOnAck", "POST", "/v1/consumers/c/ack", `{"delivery_ids":["00000000-0000-0000-0000-000000000001"],"delay":"1s"}`, 400, "delay"},
		{"BadName", "PUT", "/v1/consumers/-bad", `{}`, 400, "consumer name"},
		{"BadPolicy", "PUT", "/v1/consumers/c3", `{"deliver_policy":"sometimes"}`, 400, "deliver_policy"},
		{"StartTimeMissing", "PUT", "/v1/consumers/c3", `{"deliver_policy":"by_start_time"}`, 400, "start_time"},
		{"AckWaitTiny", "PUT", "/v1/consumers/c3", `{"ack_wait":"10ms"}`, 400, "ack_wait"},
		{"BadOrdering", "PUT", "/v1/consumers/c3", `{"ordering":"random"}`, 400, "ordering"},
		{"BadStage", "PUT", "/v1/consumers/c3", `{"stage":"done"}`, 400, "stage"},
		{"BadChannel", "PUT", "/v1/consumers/c3", `{"filter":{"channel_types":["icq"]}}`, 400, "icq"},
		{"ChangeStage", "PUT", "/v1/consumers/c", `{"stage":"received"}`, 400, "fixed"},
		{"NotJSON", "POST", "/v1/consumers/c/pull", `{"batch":`, 400, "invalid JSON"},
		{"UnknownConsumer", "POST", "/v1/consumers/nobody/pull", `{}`, 404, "no such consumer"},
		{"MalformedMessageID", "GET", "/v1/messages/123", ``, 400, "UUID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := b.raw(t, tc.method, tc.path, b.token, tc.body)
			require.Equal(t, tc.status, status, body)
			require.Contains(t, body, tc.reason)
		})
	}
	// Nothing changed: no consumer created, the message still pending.
	_, err = b.client.GetConsumer(ctx, "c2")
	require.True(t, client.IsNotFound(err))
	_, err = b.client.GetConsumer(ctx, "c3")
	require.True(t, client.IsNotFound(err))
	info, err := b.client.GetConsumer(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, "ready", info.Stage)
	require.Equal(t, int64(1), info.Stats.Pending)
	require.Zero(t, info.Stats.AckPending)
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, readOnly := b.newTenant(t, "read")
	revoked, meta, err := b.svc.TokenCreate(context.Background(), b.tenant, "revoked", []db.Role{db.RoleConsume})
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.APITokenRevoke(context.Background(), tx, b.tenant, meta.ID)
		return err
	}))
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"Missing", "", 401},
		{"Garbage", "not-a-token", 401},
		{"UnknownTenant", "mio_00000000000000000000000000000001_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 401},
		{"WrongRole", readOnly, 403},
		{"Revoked", revoked, 401},
		{"OK", b.token, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := b.raw(t, "GET", "/v1/consumers/none", tc.token, "")
			require.Equal(t, tc.status, status, body)
		})
	}
}
