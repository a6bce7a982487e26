package typing_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/typing"
)

// platform is a fake of the three platforms' typing endpoints; it records
// each call as "path body".
type platform struct {
	mu    sync.Mutex
	calls []string
	// status answers every call with this HTTP status (default 200/204).
	status int
}

func (p *platform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.calls = append(p.calls, r.URL.Path+" "+string(body))
	status := p.status
	p.mu.Unlock()
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ok":false,"error_code":429,"description":"Too Many Requests","parameters":{"retry_after":30}}`))
		return
	}
	switch {
	case r.URL.Path == "/channels/123456789012345678/typing":
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/assistant.threads.setStatus":
		var req map[string]string
		_ = json.Unmarshal(body, &req)
		if req["thread_ts"] != "1700000000.000100" {
			_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_thread_ts"}`))
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	default: // telegram
		_, _ = w.Write([]byte(`{"ok":true,"result":true}`))
	}
}

func (p *platform) taken() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.calls
	p.calls = nil
	return out
}

type bundle struct {
	signals  *prometheus.CounterVec
	env      *dbtest.Env
	adm      *admin.Service
	svc      *typing.Service
	fake     *platform
	tenant   uuid.UUID
	accounts map[string]uuid.UUID
	now      time.Time
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	adm := admin.New(env.Pool, box, "http://x")
	tn, _, err := adm.TenantCreate(ctx, "t")
	require.NoError(t, err)
	b := &bundle{env: env, adm: adm, fake: &platform{}, tenant: tn.ID, accounts: map[string]uuid.UUID{}, now: time.Unix(1_700_000_000, 0)}
	srv := httptest.NewServer(b.fake)
	t.Cleanup(srv.Close)
	for ct, creds := range map[string]string{
		"telegram":  `{"bot_token":"123456:ABC-DEF"}`,
		"discord":   `{"bot_token":"discord-token"}`,
		"slack":     `{"bot_token":"xoxb-1"}`,
		"zoho_cliq": ``,
	} {
		p := admin.AccountCreateParams{TenantID: tn.ID, ChannelType: ct, WebhookSecret: "secret-0123456789"}
		if ct == "discord" {
			p.WebhookSecret = "0000000000000000000000000000000000000000000000000000000000000000"
		}
		if creds != "" {
			p.Credentials = json.RawMessage(creds)
		}
		a, err := adm.AccountCreate(ctx, p)
		require.NoError(t, err, ct)
		b.accounts[ct] = a.ID
	}
	reg := builtin.Registry(builtin.Options{APIBase: map[string]string{"telegram": srv.URL, "discord": srv.URL, "slack": srv.URL}})
	r := accounts.NewResolver(env.Pool, accounts.ResolverConfig{Box: box, Registry: reg})
	b.signals = metrics.NewTyping(prometheus.NewRegistry())
	b.svc = typing.New(r, typing.Options{Interval: 4 * time.Second, Now: func() time.Time { return b.now }, Signals: b.signals})
	return b
}

func (b *bundle) signal(t *testing.T, ct, conv, thread string) typing.Result {
	t.Helper()
	res, err := b.svc.Signal(context.Background(), b.tenant, b.accounts[ct], conv, thread)
	require.NoError(t, err)
	return res
}

// TestTypingPerPlatform: each platform gets its own call; a channel
// without a signal is a no-op reported as unsupported.
func TestTypingPerPlatform(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, typing.Sent, b.signal(t, "telegram", "-100123", "7").Outcome)
	require.Equal(t, []string{`/bot123456:ABC-DEF/sendChatAction {"chat_id":-100123,"action":"typing","message_thread_id":7}`}, b.fake.taken())

	require.Equal(t, typing.Sent, b.signal(t, "discord", "123456789012345678", "").Outcome)
	require.Equal(t, []string{"/channels/123456789012345678/typing "}, b.fake.taken())

	require.Equal(t, typing.Sent, b.signal(t, "slack", "C1", "1700000000.000100").Outcome)
	require.Equal(t, []string{`/assistant.threads.setStatus {"channel_id":"C1","thread_ts":"1700000000.000100","status":"is thinking…"}`}, b.fake.taken())

	res := b.signal(t, "slack", "C1", "")
	require.Equal(t, typing.Unsupported, res.Outcome, "no thread: no status in Slack")
	require.Empty(t, b.fake.taken())
	res = b.signal(t, "slack", "C2", "1.2")
	require.Equal(t, typing.Unsupported, res.Outcome, "not an assistant thread")

	res = b.signal(t, "zoho_cliq", "chat-1", "")
	require.Equal(t, typing.Unsupported, res.Outcome)
	b.fake.taken()
	require.Equal(t, typing.Failed, b.signal(t, "discord", "not-a-snowflake", "").Outcome)
	require.Empty(t, b.fake.taken(), "refused before any call")

	_, err := b.svc.Signal(context.Background(), b.tenant, uuid.New(), "c", "")
	require.ErrorIs(t, err, typing.ErrAccountNotFound)
}

// TestTypingThrottled: one signal per conversation per interval; other
// conversations are independent; a platform 429 holds the conversation
// for its Retry-After.
func TestTypingThrottled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, typing.Sent, b.signal(t, "telegram", "1", "").Outcome)
	require.Equal(t, typing.Throttled, b.signal(t, "telegram", "1", "").Outcome)
	require.Equal(t, typing.Sent, b.signal(t, "telegram", "2", "").Outcome)
	require.Len(t, b.fake.taken(), 2)
	require.Equal(t, 2.0, testutil.ToFloat64(b.signals.WithLabelValues("telegram", "sent")))
	require.Equal(t, 1.0, testutil.ToFloat64(b.signals.WithLabelValues("telegram", "throttled")))
	b.now = b.now.Add(4 * time.Second)
	require.Equal(t, typing.Sent, b.signal(t, "telegram", "1", "").Outcome)

	b.now = b.now.Add(4 * time.Second)
	b.fake.status = http.StatusTooManyRequests
	require.Equal(t, typing.Throttled, b.signal(t, "telegram", "1", "").Outcome)
	b.fake.status = 0
	b.now = b.now.Add(10 * time.Second)
	require.Equal(t, typing.Throttled, b.signal(t, "telegram", "1", "").Outcome, "held for retry_after 30s")
	b.now = b.now.Add(25 * time.Second)
	require.Equal(t, typing.Sent, b.signal(t, "telegram", "1", "").Outcome)
}

// TestTypingHTTP: POST /v1/conversations/typing answers the outcome; bad
// input is 400, an unknown account 404, a disabled one 409.
func TestTypingHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.adm.AccountSetStatus(context.Background(), b.tenant, b.accounts["discord"], db.AccountDisabled)
	require.NoError(t, err)
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), Typing: b.svc})
	srv := httptest.NewServer(api.PublicHandler())
	t.Cleanup(srv.Close)
	tok, _, err := b.adm.TokenCreate(context.Background(), b.tenant, "agent", []db.Role{db.RoleProduce})
	require.NoError(t, err)
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/conversations/typing", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	status, out := post(fmt.Sprintf(`{"account_id":%q,"conversation_id":"42"}`, b.accounts["telegram"]))
	require.Equal(t, 200, status, out)
	require.JSONEq(t, `{"status":"sent"}`, out)
	status, out = post(fmt.Sprintf(`{"account_id":%q,"conversation_id":"42"}`, b.accounts["telegram"]))
	require.Equal(t, 200, status, out)
	require.JSONEq(t, `{"status":"throttled"}`, out)
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"conversation_id":"42"}`, 400},
		{fmt.Sprintf(`{"account_id":%q}`, b.accounts["telegram"]), 400},
		{fmt.Sprintf(`{"account_id":%q,"conversation_id":"42","x":1}`, b.accounts["telegram"]), 400},
		{fmt.Sprintf(`{"account_id":%q,"conversation_id":"42"}`, uuid.New()), 404},
		{fmt.Sprintf(`{"account_id":%q,"conversation_id":"123456789012345678"}`, b.accounts["discord"]), 409},
	} {
		status, out := post(c.body)
		require.Equal(t, c.status, status, "%s: %s", c.body, out)
	}
}
