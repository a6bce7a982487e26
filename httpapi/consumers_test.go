package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/metrics"
)

// TestConsumerAPIMatchesDocument drives the consumer API of docs/contract.md §4 —
// create, show, pull, read the message, extend, nak, ack, term, delete,
// and its errors — through a listener whose every answer is validated
// against the OpenAPI document (setup wraps it in openapitest.Handler).
func TestConsumerAPIMatchesDocument(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(),
		Consumers: consume.New(b.env.Pool, b.hub, nil, nil, consume.Options{})})
	srv := httptest.NewServer(openapitest.Handler(t, openapi.Public, api.PublicHandler()))
	t.Cleanup(srv.Close)
	token, _, err := b.svc.TokenCreate(ctx, b.tenant, "agent", []db.Role{db.RoleConsume, db.RoleRead})
	require.NoError(t, err)
	readOnly, _, err := b.svc.TokenCreate(ctx, b.tenant, "reader", []db.Role{db.RoleRead})
	require.NoError(t, err)
	call := func(method, path, tok, body string) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = bytes.NewReader([]byte(body))
		}
		req, err := http.NewRequest(method, srv.URL+path, rd)
		require.NoError(t, err)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw := readAll(t, resp)
		var m map[string]any
		if raw != "" {
			require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
		}
		return resp.StatusCode, m
	}

	st, _ := call(http.MethodPut, "/v1/consumers/agent-1", token, `{"ack_wait":"30s","stage":"received","filter":{"channel_types":["webhook"]}}`)
	require.Equal(t, http.StatusCreated, st)
	st, _ = call(http.MethodPut, "/v1/consumers/agent-1", token, `{"ack_wait":"1m","max_deliver":3}`)
	require.Equal(t, http.StatusOK, st)
	for i, id := range []string{"msg_a", "msg_b", "msg_c", "msg_d"} {
		body, hdr := b.webhookEvent(t, id, "conv-1", "hello "+string(rune('a'+i)))
		resp, out := post(t, b.url("webhook"), body, hdr)
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
	}

	st, m := call(http.MethodGet, "/v1/consumers/agent-1", token, "")
	require.Equal(t, http.StatusOK, st, m)
	st, m = call(http.MethodPost, "/v1/consumers/agent-1/pull", token, `{"batch":10,"wait":"5s"}`)
	require.Equal(t, http.StatusOK, st, m)
	deliveries := m["deliveries"].([]any)
	require.Len(t, deliveries, 4)
	ids := make([]string, len(deliveries))
	for i, d := range deliveries {
		ids[i] = d.(map[string]any)["delivery_id"].(string)
	}
	msgID := deliveries[0].(map[string]any)["message"].(map[string]any)["id"].(string)
	st, m = call(http.MethodGet, "/v1/messages/"+msgID, readOnly, "")
	require.Equal(t, http.StatusOK, st, m)

	settle := func(action string, ids ...string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"delivery_ids": ids})
		st, m := call(http.MethodPost, "/v1/consumers/agent-1/"+action, token, string(b))
		require.Equal(t, http.StatusOK, st, m)
		for _, r := range m["results"].([]any) {
			require.Equal(t, true, r.(map[string]any)["ok"], "%s %v", action, m)
		}
	}
	settle("extend", ids...)
	settle("ack", ids[0])
	settle("term", ids[1])
	st, m = call(http.MethodPost, "/v1/consumers/agent-1/nak", token, `{"delivery_ids":["`+ids[2]+`"],"delay":"1s"}`)
	require.Equal(t, http.StatusOK, st, m)
	// An unknown delivery is a result, not an error.
	st, m = call(http.MethodPost, "/v1/consumers/agent-1/ack", token, `{"delivery_ids":["`+uuid.NewString()+`"]}`)
	require.Equal(t, http.StatusOK, st, m)
	require.Equal(t, false, m["results"].([]any)[0].(map[string]any)["ok"])

	// Errors, each in the documented shape.
	for _, c := range []struct {
		method, path, tok, body string
		status                  int
	}{
		{http.MethodPost, "/v1/consumers/agent-1/pull", token, `{"batch":10,"bogus":1}`, http.StatusBadRequest},
		{http.MethodPost, "/v1/consumers/agent-1/pull", token, `{"batch":0}`, http.StatusBadRequest},
		{http.MethodPut, "/v1/consumers/agent-1", token, `{"max_deliver":0}`, http.StatusBadRequest},
		{http.MethodGet, "/v1/consumers/nobody", token, "", http.StatusNotFound},
		{http.MethodGet, "/v1/consumers/agent-1", "", "", http.StatusUnauthorized},
		{http.MethodGet, "/v1/consumers/agent-1", readOnly, "", http.StatusForbidden},
		{http.MethodGet, "/v1/messages/not-a-uuid", readOnly, "", http.StatusBadRequest},
		{http.MethodGet, "/v1/messages/" + uuid.NewString(), readOnly, "", http.StatusNotFound},
	} {
		st, m := call(c.method, c.path, c.tok, c.body)
		require.Equal(t, c.status, st, "%s %s: %v", c.method, c.path, m)
		require.NotEmpty(t, m["error"], "%s %s", c.method, c.path)
	}

	st, _ = call(http.MethodDelete, "/v1/consumers/agent-1", token, "")
	require.Equal(t, http.StatusNoContent, st)
}
