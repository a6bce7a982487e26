package httpapi_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/slack"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/metrics"
)

// adminAPI is the admin listener beside a testBundle's public one.
type adminAPI struct {
	*testBundle
	adm *httptest.Server
}

func newAdminAPI(t *testing.T) *adminAPI {
	t.Helper()
	b := setup(t)
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(),
		Admin: b.svc.WithRegistry(builtin.Registry(builtin.Options{}))})
	adm := httptest.NewServer(openapitest.Handler(t, openapi.Admin, api.AdminHandler()))
	t.Cleanup(adm.Close)
	return &adminAPI{testBundle: b, adm: adm}
}

func (a *adminAPI) token(t *testing.T, roles ...db.AdminRole) string {
	t.Helper()
	tok, hash := db.NewAdminTokenSecret()
	_, err := db.AdminTokenInsert(context.Background(), a.env.Pool, "test", roles, hash, nil)
	require.NoError(t, err)
	return tok
}

func (a *adminAPI) call(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	return (&outAPI{}).do(t, method, a.adm.URL+path, token, body)
}

// auditCount counts the audit rows of action ("" = all).
func (a *adminAPI) auditCount(t *testing.T, action string) int {
	t.Helper()
	var n int
	require.NoError(t, a.env.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM mio.audit_log WHERE $1 = '' OR action = $1`, action).Scan(&n))
	return n
}

// TestAdminAPIRolesAndAudit: viewers read and cannot mutate, operators
// change settings but cannot rotate secrets, credential-admins rotate;
// every mutation writes one audit row; bad input answers 4xx and writes
// nothing.
func TestAdminAPIRolesAndAudit(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	viewer, operator, cred := a.token(t, "viewer"), a.token(t, "operator"), a.token(t, "credential-admin")
	acct := "/admin/v1/accounts/" + a.accounts["slack"].String()

	status, m := a.call(t, http.MethodGet, "/admin/v1/tenants", viewer, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Len(t, m["items"], 1)
	status, m = a.call(t, http.MethodGet, acct, viewer, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, true, m["has_webhook_secret"])
	require.NotContains(t, fmt.Sprint(m), a.slackSecret, "secrets are never shown")

	before := a.auditCount(t, "")
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/admin/v1/tenants", `{"name":"x"}`},
		{http.MethodPatch, acct, `{"max_attempts":3}`},
		{http.MethodPost, acct + "/disable", ""},
		{http.MethodPost, acct + "/rotate-webhook-secret", `{"webhook_secret":"new"}`},
		{http.MethodPost, "/admin/v1/admin-tokens", `{"name":"x","roles":["viewer"]}`},
		{http.MethodPost, "/admin/v1/dead-letters/requeue", `{}`},
	} {
		status, _ := a.call(t, c.method, c.path, viewer, c.body)
		require.Equal(t, http.StatusForbidden, status, "a viewer cannot %s %s", c.method, c.path)
	}
	status, _ = a.call(t, http.MethodPost, acct+"/rotate-webhook-secret", operator, `{"webhook_secret":"new"}`)
	require.Equal(t, http.StatusForbidden, status, "an operator cannot rotate secrets")
	status, _ = a.call(t, http.MethodGet, "/admin/v1/admin-tokens", operator, "")
	require.Equal(t, http.StatusForbidden, status, "an operator cannot list admin tokens")

	// Bad input: 400, nothing written.
	for _, body := range []string{`{"max_attempts":0}`, `{"rate_limit_per_sec":-1}`, `{"settings":[1]}`,
		`{"settings":{"api_base_url":"not a url"}}`, `{"display_name":""}`, `{"nope":1}`, `{`} {
		status, m := a.call(t, http.MethodPatch, acct, operator, body)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", body, m)
	}
	status, _ = a.call(t, http.MethodPost, "/admin/v1/tenants/"+a.tenant.String()+"/accounts", cred, `{"channel_type":"fax"}`)
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = a.call(t, http.MethodPost, "/admin/v1/admin-tokens", cred, `{"name":"x","roles":["root"]}`)
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = a.call(t, http.MethodPost, acct+"/rotate-webhook-secret", cred, `{"webhook_secret":"s","grace":"forever"}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, before, a.auditCount(t, ""), "refused requests write nothing")

	// Operators change settings and limits; the audit row holds before and after.
	status, m = a.call(t, http.MethodPatch, acct, operator,
		`{"max_attempts":3,"rate_limit_per_sec":2.5,"rate_limit_burst":5,"settings":{"api_base_url":"https://slack.example.com/api"}}`)
	require.Equal(t, http.StatusOK, status, m)
	require.EqualValues(t, 3, m["max_attempts"])
	require.EqualValues(t, 2.5, m["rate_limit_per_sec"])
	require.Equal(t, "https://slack.example.com/api", m["settings"].(map[string]any)["api_base_url"])
	status, m = a.call(t, http.MethodPatch, acct, operator, `{"rate_limit_per_sec":null}`)
	require.Equal(t, http.StatusOK, status, m)
	require.Nil(t, m["rate_limit_per_sec"], "null: back to the channel default")
	require.EqualValues(t, 3, m["max_attempts"], "absent: unchanged")

	status, m = a.call(t, http.MethodPost, acct+"/disable", operator, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, "disabled", m["status"])
	status, _ = a.call(t, http.MethodPost, acct+"/disable", operator, "")
	require.Equal(t, http.StatusOK, status, "disabling twice is a no-op")
	status, _ = a.call(t, http.MethodPost, acct+"/enable", operator, "")
	require.Equal(t, http.StatusOK, status)

	status, m = a.call(t, http.MethodPost, acct+"/rotate-webhook-secret", cred, `{"webhook_secret":"rotated-signing-secret","grace":"1h"}`)
	require.Equal(t, http.StatusOK, status, m)
	require.NotEmpty(t, m["webhook_secret_prev_until"])
	require.NotContains(t, fmt.Sprint(m), "rotated-signing-secret")

	status, m = a.call(t, http.MethodPost, "/admin/v1/tenants", operator, `{"name":"second"}`)
	require.Equal(t, http.StatusCreated, status, m)
	tid := m["id"].(string)
	created := a.auditCount(t, "tenant.create")
	for _, name := range []string{"second", "SECOND"} {
		status, m = a.call(t, http.MethodPost, "/admin/v1/tenants", operator, fmt.Sprintf(`{"name":%q}`, name))
		require.Equal(t, http.StatusOK, status, "a taken name (case-insensitively) answers the existing tenant: %v", m)
		require.Equal(t, tid, m["id"])
		require.Equal(t, "second", m["name"])
	}
	require.Equal(t, created, a.auditCount(t, "tenant.create"), "nothing created, nothing audited")
	status, m = a.call(t, http.MethodPost, "/admin/v1/tenants/"+tid+"/disable", operator, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, true, m["changed"])
	status, m = a.call(t, http.MethodPost, "/admin/v1/tenants/"+tid+"/tokens", operator, `{"name":"agent","roles":["consume"]}`)
	require.Equal(t, http.StatusCreated, status, m)
	require.Contains(t, m["token"], "mio_", "shown once")
	tokPath := "/admin/v1/tenants/" + tid + "/tokens/" + m["id"].(string) + "/revoke"
	status, m = a.call(t, http.MethodPost, tokPath, operator, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, true, m["changed"])
	status, m = a.call(t, http.MethodPost, tokPath, operator, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, false, m["changed"], "revoking twice is a no-op")
	status, m = a.call(t, http.MethodGet, "/admin/v1/tenants/"+tid+"/tokens", viewer, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Len(t, m["items"], 1)
	require.NotContains(t, m["items"].([]any)[0], "token")

	for action, n := range map[string]int{"account.update": 2, "account.disable": 1, "account.enable": 1,
		"account.rotate_webhook_secret": 1, "tenant.create": 2 /* the bundle's, as system */, "tenant.disable": 1, "api_token.create": 1,
		"api_token.revoke": 1} {
		require.Equal(t, n, a.auditCount(t, action), action)
	}
	status, m = a.call(t, http.MethodGet, "/admin/v1/audit?limit=2", viewer, "")
	require.Equal(t, http.StatusOK, status, m)
	items := m["items"].([]any)
	require.Len(t, items, 2)
	first := items[0].(map[string]any)
	require.Equal(t, "api_token.revoke", first["action"])
	require.Contains(t, first["actor"], "admin:")
	require.NotEmpty(t, m["next"])
	status, m = a.call(t, http.MethodGet, "/admin/v1/audit?limit=2&before="+m["next"].(string), viewer, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, "tenant.disable", m["items"].([]any)[0].(map[string]any)["action"])
	var auditText string
	require.NoError(t, a.env.Pool.QueryRow(context.Background(), `SELECT string_agg(coalesce(before::text,'') || coalesce(after::text,''), ' ') FROM mio.audit_log`).Scan(&auditText))
	require.NotContains(t, auditText, "rotated-signing-secret")
	require.NotContains(t, auditText, a.slackSecret)
}

// TestAdminTokenRevocationAndExpiry: a revoked or expired admin token is
// refused; revocation is itself audited.
func TestAdminTokenRevocationAndExpiry(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	cred := a.token(t, "credential-admin")
	status, m := a.call(t, http.MethodPost, "/admin/v1/admin-tokens", cred, `{"name":"ops","roles":["viewer","operator"],"ttl":"720h"}`)
	require.Equal(t, http.StatusCreated, status, m)
	require.NotEmpty(t, m["expires_at"])
	newTok, id := m["token"].(string), m["id"].(string)
	status, m = a.call(t, http.MethodPost, "/admin/v1/admin-tokens/"+id+"/revoke", cred, "")
	require.Equal(t, http.StatusOK, status, m)
	status, _ = a.call(t, http.MethodGet, "/admin/v1/tenants", newTok, "")
	require.Equal(t, http.StatusUnauthorized, status, "revoked")
	require.Equal(t, 1, a.auditCount(t, "admin_token.revoke"))

	tok, hash := db.NewAdminTokenSecret()
	past := time.Now().Add(-time.Minute)
	_, err := db.AdminTokenInsert(context.Background(), a.env.Pool, "old", []db.AdminRole{"viewer"}, hash, &past)
	require.NoError(t, err)
	status, _ = a.call(t, http.MethodGet, "/admin/v1/tenants", tok, "")
	require.Equal(t, http.StatusUnauthorized, status, "expired")

	status, m = a.call(t, http.MethodGet, "/admin/v1/admin-tokens", cred, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Len(t, m["items"], 3)
	require.NotContains(t, fmt.Sprint(m), tok)
}

// TestWebhookSecretGrace: after a rotation with a grace period, webhooks
// signed with the old or the new secret verify; once the grace period is
// over, only the new one does.
func TestWebhookSecretGrace(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	cred := a.token(t, "credential-admin")
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString(randBytes(32))
	status, m := a.call(t, http.MethodPost, "/admin/v1/accounts/"+a.accounts["webhook"].String()+"/rotate-webhook-secret", cred,
		`{"webhook_secret":"`+newSecret+`","grace":"1h"}`)
	require.Equal(t, http.StatusOK, status, m)
	for i, secret := range []string{a.webhookSecret, newSecret} {
		body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":"c"},"sender":{"id":"u1"},"text":"hi %d"}}`,
			time.Now().UTC().Format(time.RFC3339), i))
		now := time.Now()
		sig, err := webhook.Sign(secret, fmt.Sprint("evt", i), now, body)
		require.NoError(t, err)
		resp, out := post(t, a.url("webhook"), body, map[string]string{"webhook-id": fmt.Sprint("evt", i),
			"webhook-timestamp": strconv.FormatInt(now.Unix(), 10), "webhook-signature": sig})
		require.Equal(t, http.StatusOK, resp.StatusCode, "secret %d: %s", i, out)
	}

	// Slack, rotated with a grace period already over: the old secret fails.
	status, m = a.call(t, http.MethodPost, "/admin/v1/accounts/"+a.accounts["slack"].String()+"/rotate-webhook-secret", cred,
		`{"webhook_secret":"new-slack-signing-secret","grace":"1ns"}`)
	require.Equal(t, http.StatusOK, status, m)
	body := []byte(`{"type":"event_callback","event_id":"Ev1","team_id":"T1","event":{"type":"message","channel":"C1","user":"U1","text":"hi","ts":"1.000001"}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	resp, _ := post(t, a.url("slack"), body, map[string]string{"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": slack.Signature(a.slackSecret, ts, body)})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, out := post(t, a.url("slack"), body, map[string]string{"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": slack.Signature("new-slack-signing-secret", ts, body)})
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
}

// TestAdminOutboundSearch: outbound messages by state, account,
// conversation and time, newest first, keyset-paged.
func TestAdminOutboundSearch(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	tok, hash := db.NewAdminTokenSecret()
	_, err := db.AdminTokenInsert(context.Background(), o.env.Pool, "v", []db.AdminRole{"viewer"}, hash, nil)
	require.NoError(t, err)
	for i := range 3 {
		status, m := o.send(t, o.a, cmd(fmt.Sprintf("s%d", i), o.a.account, ""))
		require.Equal(t, http.StatusAccepted, status, m)
	}
	base := o.adm.URL + "/admin/v1/tenants/" + o.a.id.String() + "/outbound"
	status, m := o.do(t, http.MethodGet, base+"?state=queued&conversation_id=c-1&account_id="+o.a.account.String()+"&limit=2", tok, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Len(t, m["items"], 2)
	require.NotEmpty(t, m["next_cursor"])
	status, m = o.do(t, http.MethodGet, base+"?limit=2&cursor="+m["next_cursor"].(string), tok, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Len(t, m["items"], 1)

	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	status, m = o.do(t, http.MethodGet, base+"?until="+past, tok, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Empty(t, m["items"])
	status, m = o.do(t, http.MethodGet, base+"?since="+future, tok, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Empty(t, m["items"])
	status, m = o.do(t, http.MethodGet, base+"?since="+past+"&until="+future, tok, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Len(t, m["items"], 3)
	for _, bad := range []string{"?since=yesterday", "?state=lost", "?x=1"} {
		status, _ := o.do(t, http.MethodGet, base+bad, tok, "")
		require.Equal(t, http.StatusBadRequest, status, bad)
	}
}

// TestAdminLiveTail: a webhook's message shows on the tenant's live tail
// (Server-Sent Events).
func TestAdminLiveTail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), Hub: b.hub, Admin: b.svc})
	adm := httptest.NewServer(api.AdminHandler())
	t.Cleanup(adm.Close)
	a := &adminAPI{testBundle: b, adm: adm}
	viewer := a.token(t, "viewer")

	req, err := http.NewRequest(http.MethodGet, adm.URL+"/admin/v1/tenants/"+b.tenant.String()+"/tail", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewer)
	// A deadline: a tail that never sends the message fails, not hangs.
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan()) // the opening comment: the subscription is live

	body, hdr := b.webhookEvent(t, "evt-tail", "conv-tail", "hello tail")
	wr, out := post(t, b.url("webhook"), body, hdr)
	require.Equal(t, http.StatusOK, wr.StatusCode, out)
	for lines.Scan() {
		if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &m))
			require.Equal(t, "conv-tail", m["conversation_id"])
			require.Contains(t, fmt.Sprint(m["envelope"]), "hello tail")
			return
		}
	}
	t.Fatal("the stream ended without the message")
}

// TestQueueHealth: a consumer behind the stream shows its untaken
// messages in mio.queue_health (pending and oldest_pending_age), in the
// admin API and in GET /v1/consumers/{name}'s stats.
func TestQueueHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	consumers := consume.New(b.env.Pool, b.hub, nil, nil, consume.Options{})
	_, _, err := consumers.Put(ctx, b.tenant, "behind", consume.Config{})
	require.NoError(t, err)
	for i := range 3 {
		body, hdr := b.webhookEvent(t, fmt.Sprint("qh", i), "c", fmt.Sprint("m", i))
		resp, out := post(t, b.url("webhook"), body, hdr)
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
	}
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), Consumers: consumers, Admin: b.svc})
	adm := httptest.NewServer(api.AdminHandler())
	t.Cleanup(adm.Close)
	pub := httptest.NewServer(api.PublicHandler())
	t.Cleanup(pub.Close)
	a := &adminAPI{testBundle: b, adm: adm}

	status, m := a.call(t, http.MethodGet, "/admin/v1/queue-health", a.token(t, "viewer"), "")
	require.Equal(t, http.StatusOK, status, m)
	var row map[string]any
	for _, it := range m["items"].([]any) {
		if it := it.(map[string]any); it["consumer"] == "behind" {
			row = it
		}
	}
	require.NotNil(t, row, m)
	require.EqualValues(t, 3, row["pending"], "messages not yet taken are pending")
	require.Greater(t, row["oldest_pending_age_seconds"].(float64), 0.0)

	token, _, err := b.svc.TokenCreate(ctx, b.tenant, "c", []db.Role{db.RoleConsume})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, pub.URL+"/v1/consumers/behind", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var got struct {
		Stats struct {
			Pending          int    `json:"pending"`
			OldestPendingAge string `json:"oldest_pending_age"`
		} `json:"stats"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, 3, got.Stats.Pending)
	require.NotEqual(t, "0s", got.Stats.OldestPendingAge, "stats count the messages not yet taken")

	// Without a tenant, the runtime role sees the River queues only.
	var n int
	require.NoError(t, b.env.Pool.QueryRow(ctx, `SELECT count(*) FROM mio.queue_health WHERE kind = 'consumer'`).Scan(&n))
	require.Zero(t, n, "row-level security hides consumers without a tenant")
}

// TestAdminListenerHardening: the admin listener answers only allowed
// networks, and pprof is off unless configured, then for operators only.
func TestAdminListenerHardening(t *testing.T) {
	t.Parallel()
	b := setup(t)
	serve := func(d httpapi.Deps) *httptest.Server {
		d.Pool, d.Metrics, d.Admin = b.env.Pool, metrics.New(), b.svc
		srv := httptest.NewServer(httpapi.New(d).AdminHandler())
		t.Cleanup(srv.Close)
		return srv
	}
	get := func(url, token string) int {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	def := serve(httpapi.Deps{})
	require.Equal(t, http.StatusOK, get(def.URL+"/metrics", ""), "loopback is allowed by default")
	require.Equal(t, http.StatusNotFound, get(def.URL+"/debug/pprof/", ""), "pprof is off by default")

	other := serve(httpapi.Deps{AdminAllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	require.Equal(t, http.StatusForbidden, get(other.URL+"/metrics", ""))
	require.Equal(t, http.StatusForbidden, get(other.URL+"/admin/v1/tenants", ""))

	prof := serve(httpapi.Deps{Pprof: true})
	a := &adminAPI{testBundle: b, adm: prof}
	require.Equal(t, http.StatusUnauthorized, get(prof.URL+"/debug/pprof/", ""))
	require.Equal(t, http.StatusForbidden, get(prof.URL+"/debug/pprof/", a.token(t, "viewer")))
	require.Equal(t, http.StatusOK, get(prof.URL+"/debug/pprof/", a.token(t, "operator")))
}

// TestTenantDisable: a disabled tenant's API tokens answer 403 and its
// webhooks 404.
func TestTenantDisable(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	token, _, err := a.svc.TokenCreate(context.Background(), a.tenant, "r", []db.Role{db.RoleRead})
	require.NoError(t, err)
	status, m := a.call(t, http.MethodPost, "/admin/v1/tenants/"+a.tenant.String()+"/disable", a.token(t, "operator"), "")
	require.Equal(t, http.StatusOK, status, m)

	req, err := http.NewRequest(http.MethodGet, a.srv.URL+"/v1/messages/"+db.IDFloor(time.Now()).String(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	body, hdr := a.webhookEvent(t, "evt-off", "c", "hi")
	wr, _ := post(t, a.url("webhook"), body, hdr)
	require.Equal(t, http.StatusNotFound, wr.StatusCode)
}

// TestConsumerSeek: seeking a consumer back re-delivers the messages
// received since; seeking to the future skips to the end of the stream.
func TestConsumerSeek(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	ctx := context.Background()
	consumers := consume.New(a.env.Pool, a.hub, nil, nil, consume.Options{})
	_, _, err := consumers.Put(ctx, a.tenant, "agent", consume.Config{})
	require.NoError(t, err)
	start := time.Now().Add(-time.Second)
	ingest := func(id string) {
		body, hdr := a.webhookEvent(t, id, "c", id)
		resp, out := post(t, a.url("webhook"), body, hdr)
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
	}
	drain := func() int {
		ds, err := consumers.Pull(ctx, a.tenant, "agent", 100, 0)
		require.NoError(t, err)
		ids := make([]uuid.UUID, len(ds))
		for i, d := range ds {
			ids[i] = d.DeliveryID
		}
		if len(ids) > 0 {
			_, err = consumers.Settle(ctx, a.tenant, "agent", consume.ActionAck, ids, consume.SettleOptions{})
			require.NoError(t, err)
		}
		return len(ds)
	}
	for i := range 3 {
		ingest(fmt.Sprint("seek", i))
	}
	require.Equal(t, 3, drain())
	require.Equal(t, 0, drain())

	operator := a.token(t, "operator")
	path := "/admin/v1/tenants/" + a.tenant.String() + "/consumers/agent/seek"
	status, m := a.call(t, http.MethodPost, path, operator, `{"time":"`+start.UTC().Format(time.RFC3339Nano)+`"}`)
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, 3, drain(), "seeking back re-delivers")

	status, m = a.call(t, http.MethodPost, path, operator, `{"time":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`)
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, 0, drain())
	ingest("after-seek")
	require.Equal(t, 1, drain(), "a message after the seek is delivered")

	status, _ = a.call(t, http.MethodPost, path, operator, `{"time":"soon"}`)
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = a.call(t, http.MethodPost, "/admin/v1/tenants/"+a.tenant.String()+"/consumers/nope/seek", operator, `{"time":"2026-01-01T00:00:00Z"}`)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, 2, a.auditCount(t, "consumer.seek"))
}

// TestAdminBearerSchemeAnyCase: the admin listener reads the
// Authorization header like the public API (RFC 7235: the scheme is
// case-insensitive), and still refuses other schemes.
func TestAdminBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), Hub: b.hub, Admin: b.svc})
	adm := httptest.NewServer(api.AdminHandler())
	t.Cleanup(adm.Close)
	viewer := (&adminAPI{testBundle: b, adm: adm}).token(t, "viewer")
	for header, want := range map[string]int{
		"bearer " + viewer: http.StatusOK,
		"BEARER " + viewer: http.StatusOK,
		"Basic " + viewer:  http.StatusUnauthorized,
		"Bearer ":          http.StatusUnauthorized,
	} {
		req, err := http.NewRequest(http.MethodGet, adm.URL+"/admin/v1/tenants", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", header)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "Authorization: %q", header)
	}
}

// TestAdminConsumerPages: the consumer listing across tenants is keyset
// paged: every consumer once, tenants in order, each tenant's by name.
func TestAdminConsumerPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other, _, err := b.svc.TenantCreate(ctx, "other")
	require.NoError(t, err)
	consumers := consume.New(b.env.Pool, b.hub, nil, nil, consume.Options{})
	for _, tn := range []uuid.UUID{b.tenant, other.ID} {
		for _, name := range []string{"c3", "c1", "c2"} {
			_, _, err := consumers.Put(ctx, tn, name, consume.Config{})
			require.NoError(t, err)
		}
	}
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), Consumers: consumers, Admin: b.svc})
	adm := httptest.NewServer(api.AdminHandler())
	t.Cleanup(adm.Close)
	a := &adminAPI{testBundle: b, adm: adm}
	viewer := a.token(t, "viewer")
	var got []string
	after, pages := "", 0
	for {
		status, m := a.call(t, http.MethodGet, "/admin/v1/consumers?limit=4&after="+url.QueryEscape(after), viewer, "")
		require.Equal(t, http.StatusOK, status, m)
		pages++
		for _, it := range m["items"].([]any) {
			it := it.(map[string]any)
			got = append(got, fmt.Sprint(it["tenant_id"], "/", it["name"]))
		}
		next, _ := m["next"].(string)
		if next == "" {
			break
		}
		after = next
		require.Less(t, pages, 5, "paging must end")
	}
	require.Equal(t, 2, pages)
	var want []string
	for _, tn := range []uuid.UUID{b.tenant, other.ID} {
		for _, name := range []string{"c1", "c2", "c3"} {
			want = append(want, fmt.Sprint(tn, "/", name))
		}
	}
	require.Equal(t, want, got)
	status, m := a.call(t, http.MethodGet, "/admin/v1/consumers?after=bogus", viewer, "")
	require.Equal(t, http.StatusBadRequest, status, m)
}

// TestAdminChannelTypes: a viewer reads the registry's channels with
// their derived capabilities, default rate limits and settings and
// credentials schemas; no token is 401.
func TestAdminChannelTypes(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	status, _ := a.call(t, http.MethodGet, "/admin/v1/channel-types", "", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, m := a.call(t, http.MethodGet, "/admin/v1/channel-types", a.token(t, db.AdminRoleViewer), "")
	require.Equal(t, http.StatusOK, status, m)
	bySlug := map[string]map[string]any{}
	for _, it := range m["items"].([]any) {
		it := it.(map[string]any)
		bySlug[it["slug"].(string)] = it
	}
	require.Len(t, bySlug, len(builtin.Registry(builtin.Options{}).Types()))
	require.Equal(t, "Discord", bySlug["discord"]["display_name"])
	require.ElementsMatch(t, []any{"edit", "typing", "history", "rich_content", "attachments", "streaming", "source", "install", "interactions", "reactions"}, bySlug["discord"]["capabilities"])
	require.ElementsMatch(t, []any{"receipts", "rich_content", "attachments", "interactions", "reactions"}, bySlug["whatsapp"]["capabilities"])
	for slug, it := range bySlug {
		native := slug == "slack" || slug == "telegram" || slug == "teams"
		require.Equal(t, native, slices.Contains(it["capabilities"].([]any), any("native_streaming")), slug)
	}
	require.Equal(t, []any{map[string]any{"key": "account", "per_sec": 30.0, "burst": 30.0},
		map[string]any{"key": "conversation", "per_sec": 1.0, "burst": 3.0}}, bySlug["telegram"]["default_rate_limits"])
	require.Empty(t, bySlug["webhook"]["default_rate_limits"])
	require.Contains(t, bySlug["telegram"]["credentials_schema"], map[string]any{"name": "bot_token", "type": "string",
		"required": true, "secret": true, "description": "The bot's token from @BotFather: sends, file downloads, polling."})
	require.Contains(t, bySlug["webhook"]["settings_schema"], map[string]any{"name": "endpoint_url", "type": "string",
		"required": true, "secret": false, "description": "Where outbound messages are POSTed (an absolute http(s) URL)."})
}
