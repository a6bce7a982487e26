package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/workers"
)

// TestConversationMessages: a conversation's inbound and outbound
// messages come back in order, newest page first and each page oldest
// first, through next_cursor; other conversations and other tenants'
// messages never; bad input is 400 and a token without read 403.
func TestConversationMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	river, err := workers.NewClient(b.env.Pool, nil, workers.Config{})
	require.NoError(t, err)
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), Registry: nil, Ingester: b.ingester,
		Outbox: outbox.New(b.env.Pool, river)})
	srv := httptest.NewServer(openapitest.Handler(t, openapi.Public, api.PublicHandler()))
	t.Cleanup(srv.Close)
	token, _, err := b.svc.TokenCreate(ctx, b.tenant, "agent", []db.Role{db.RoleRead, db.RoleProduce})
	require.NoError(t, err)
	produce, _, err := b.svc.TokenCreate(ctx, b.tenant, "producer", []db.Role{db.RoleProduce})
	require.NoError(t, err)
	other, _, err := b.svc.TenantCreate(ctx, "other")
	require.NoError(t, err)
	otherToken, _, err := b.svc.TokenCreate(ctx, other.ID, "reader", []db.Role{db.RoleRead})
	require.NoError(t, err)

	const conv = "room/1 #a" // escaped in the path
	account := b.accounts["webhook"]
	var want []string
	in := func(id, c, text string) {
		body, hdr := b.webhookEvent(t, id, c, text)
		resp, out := post(t, b.url("webhook"), body, hdr)
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
	}
	send := func(key, text string) {
		body := fmt.Sprintf(`{"idempotency_key":%q,"account_id":%q,"conversation_id":%q,"text":%q}`, key, account, conv, text)
		resp, out := post(t, srv.URL+"/v1/outbound", []byte(body), map[string]string{"Authorization": "Bearer " + token})
		require.Equal(t, http.StatusAccepted, resp.StatusCode, out)
	}
	in("m1", conv, "hello")
	want = append(want, "in:hello")
	send("k1", "hi")
	want = append(want, "out:hi")
	in("m2", "elsewhere", "not here")
	in("m3", conv, "how are you?")
	want = append(want, "in:how are you?")
	send("k2", "fine")
	want = append(want, "out:fine")

	get := func(tok, query string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/conversations/"+account.String()+"/"+url.PathEscape(conv)+"/messages"+query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(readAll(t, resp)), &m))
		return resp.StatusCode, m
	}
	texts := func(page map[string]any) []string {
		var out []string
		for _, it := range page["items"].([]any) {
			it := it.(map[string]any)
			if it["direction"] == "inbound" {
				out = append(out, "in:"+it["message"].(map[string]any)["text"].(string))
			} else {
				out = append(out, "out:"+it["outbound"].(map[string]any)["text"].(string))
			}
		}
		return out
	}

	status, page := get(token, "")
	require.Equal(t, http.StatusOK, status, page)
	require.Equal(t, want, texts(page))
	require.NotContains(t, page, "next_cursor")

	var got []string
	cursor := ""
	for i := 0; ; i++ {
		require.Less(t, i, 5, "paging does not end")
		q := "?limit=2"
		if cursor != "" {
			q += "&before=" + url.QueryEscape(cursor)
		}
		status, page = get(token, q)
		require.Equal(t, http.StatusOK, status, page)
		got = append(texts(page), got...)
		next, ok := page["next_cursor"].(string)
		if !ok {
			break
		}
		cursor = next
	}
	require.Equal(t, want, got)

	status, page = get(otherToken, "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, page["items"], "another tenant sees nothing of this conversation")
	status, _ = get(produce, "")
	require.Equal(t, http.StatusForbidden, status)
	for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?before=junk", "?cursor=x"} {
		status, page = get(token, q)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", q, page)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/conversations/not-a-uuid/c/messages", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
