package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/secretbox"
)

// TestGoogleChatEndToEnd: two `mio serve` processes on one database, a
// Google Chat account pointed at a fake Google whose access tokens live
// 2 seconds.
//   - Inbound: a message with a project-number token and one with an ID
//     token each become one envelope; forged, expired and wrong-audience
//     tokens are answered 401 and store nothing.
//   - Replies in one thread reach the fake once each, in order, after the
//     fake's 429s with Retry-After; an edit updates the reply.
//   - Renewal: sends for 12 s, alternating between the replicas, never
//     go with an expired token, and the token is renewed about once per
//     80 % of its lifetime in total, not per process. Then the key is
//     deleted: the account is disabled with the reason.
func TestGoogleChatEndToEnd(t *testing.T) {
	t.Parallel()
	const (
		project  = "123456789012"
		endpoint = "https://mio.example/webhooks/google_chat/app"
		lifetime = 2 * time.Second
	)
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	registry := builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	svc := admin.New(env.Pool, box, "http://mio.test").WithRegistry(registry)
	tenant, _, err := svc.TenantCreate(ctx, "google-chat")
	require.NoError(t, err)
	g := channelstest.NewFakeGoogle(t, lifetime)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "google_chat",
		ExternalID: project, Settings: g.Settings("", endpoint), Credentials: g.Credentials()})
	require.NoError(t, err)
	require.Equal(t, "google service-account key: renewed by MIO", acct.CredentialRenewal)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	procEnv := []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
		"MIO_API_ALLOW_HTTP_HOSTS=127.0.0.1", "MIO_LOG_LEVEL=error", "MIO_BLOB_URL=file://" + t.TempDir()}
	procs := []*chaosProc{newChaosProc(t, "mio-a", "all", procEnv), newChaosProc(t, "mio-b", "all", procEnv)}
	for _, p := range procs {
		require.NoError(t, p.start(60*time.Second))
		t.Cleanup(p.kill)
	}
	api := client.New(procs[0].public, token)
	_, err = api.PutConsumer(ctx, "chat", client.ConsumerConfig{})
	require.NoError(t, err)

	// Inbound.
	post := func(proc int, bearer string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, procs[proc].public+"/webhooks/google_chat/"+acct.ID.String(), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			require.JSONEq(t, `{}`, string(b))
		}
		return resp.StatusCode
	}
	event := func(id, text string) []byte {
		return []byte(fmt.Sprintf(`{"type":"MESSAGE","eventTime":"2024-05-01T12:00:00Z","message":{"name":"spaces/S1/messages/%s",`+
			`"sender":{"name":"users/1","displayName":"Ada","type":"HUMAN"},"createTime":"2024-05-01T12:00:00Z","text":%q,`+
			`"thread":{"name":"spaces/S1/threads/T1"},"space":{"name":"spaces/S1","type":"ROOM","spaceType":"SPACE"}},`+
			`"user":{"name":"users/1","displayName":"Ada","type":"HUMAN"},"space":{"name":"spaces/S1","type":"ROOM","spaceType":"SPACE"}}`, id, text))
	}
	now := time.Now()
	forger := channelstest.NewRSAKey(t)
	for name, bearer := range map[string]string{
		"forged": channelstest.SignGoogleToken(t, forger, channelstest.FakeChatKeyID, jwt.MapClaims{"iss": "chat@system.gserviceaccount.com",
			"aud": project, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}),
		"expired":        g.ChatToken(t, project, now.Add(-2*time.Hour)),
		"wrong audience": g.ChatToken(t, "999999999999", now),
		"wrong endpoint": g.OIDCToken(t, "https://evil.example/chat", now),
		"not a token":    "AbCdEf123456",
		"ID token of a stranger": channelstest.SignGoogleToken(t, g.OIDCKey(), channelstest.FakeOIDCKeyID, jwt.MapClaims{"iss": "https://accounts.google.com",
			"aud": endpoint, "email": "someone@example.com", "email_verified": true, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}),
	} {
		require.Equal(t, http.StatusUnauthorized, post(0, bearer, event("bad.bad", "must not be stored")), name)
	}
	require.Equal(t, http.StatusOK, post(0, g.ChatToken(t, project, now), event("m1.m1", "hello from a project-number token")))
	require.Equal(t, http.StatusOK, post(1, g.OIDCToken(t, endpoint, now), event("m2.m2", "hello from an ID token")))
	require.Equal(t, http.StatusOK, post(1, g.ChatToken(t, project, now), event("m1.m1", "hello from a project-number token")), "a redelivery")
	var texts []string
	pullCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(texts) < 2 {
		ds, err := api.Pull(pullCtx, "chat", 10, time.Second)
		require.NoError(t, err)
		for _, d := range ds {
			_, err := api.Ack(pullCtx, "chat", d.DeliveryID)
			require.NoError(t, err)
			require.Equal(t, "spaces/S1", d.Message.Conversation.ID)
			require.Equal(t, "spaces/S1/threads/T1", d.Message.ThreadID)
			texts = append(texts, d.Message.Text)
		}
	}
	require.ElementsMatch(t, []string{"hello from a project-number token", "hello from an ID token"}, texts)
	var stored int
	require.NoError(t, db.InTenantTx(ctx, env.Pool, tenant.ID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM mio.inbox WHERE tenant_id = $1`, tenant.ID).Scan(&stored)
	}))
	require.Equal(t, 2, stored, "one envelope per authentic message; nothing from refused requests")

	// Replies in order through 429s, then an edit.
	send := func(proc int, cmd map[string]any) (string, int) {
		body, _ := json.Marshal(cmd)
		req, _ := http.NewRequest(http.MethodPost, procs[proc].public+"/v1/outbound", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out struct {
			ID string `json:"id"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out.ID, resp.StatusCode
	}
	g.Throttle(2, "1")
	began := time.Now()
	var first string
	for i := range 4 {
		id, code := send(i%2, map[string]any{"idempotency_key": fmt.Sprintf("reply-%d", i), "account_id": acct.ID,
			"conversation_id": "spaces/S1", "thread_id": "spaces/S1/threads/T1", "text": fmt.Sprintf("reply %d", i)})
		require.Less(t, code, 300)
		if i == 0 {
			first = id
		}
	}
	require.Eventually(t, func() bool { return len(g.Calls()) >= 4 }, 30*time.Second, 50*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(began), 2*time.Second, "two 429s with Retry-After: 1 were waited out")
	require.Equal(t, 2, g.Throttled())
	var got []string
	for _, c := range g.Calls() {
		require.Equal(t, http.MethodPost, c.Method)
		require.Equal(t, "/v1/spaces/S1/messages", c.Path)
		require.Contains(t, c.Query, "messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD")
		got = append(got, c.Body["text"].(string))
	}
	require.Equal(t, []string{"reply 0", "reply 1", "reply 2", "reply 3"}, got, "each reply once, in order")
	_, code := send(1, map[string]any{"idempotency_key": "edit-0", "account_id": acct.ID, "conversation_id": "spaces/S1",
		"text": "reply 0, edited", "edit_of": first})
	require.Less(t, code, 300)
	require.Eventually(t, func() bool { return len(g.Calls()) == 5 }, 30*time.Second, 50*time.Millisecond)
	edit := g.Calls()[4]
	require.Equal(t, http.MethodPatch, edit.Method)
	require.Equal(t, "reply 0, edited", g.Text(strings.TrimPrefix(edit.Path, "/v1/")))

	// Renewal shared across the replicas.
	refusedBefore, tokensBefore := g.Refused(), g.TokenRequests()
	const sends, duration = 60, 12 * time.Second
	begin := time.Now()
	var wg sync.WaitGroup
	for i := range sends {
		time.Sleep(time.Until(begin.Add(time.Duration(i) * duration / sends)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, code := send(i%2, map[string]any{"idempotency_key": fmt.Sprintf("renew-%d", i), "account_id": acct.ID,
				"conversation_id": fmt.Sprintf("spaces/R%d", i%8), "text": fmt.Sprintf("renewal %d", i)})
			require.Less(t, code, 300, "send %d", i)
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool { return len(g.Calls()) >= 5+sends }, 30*time.Second, 50*time.Millisecond,
		"sent %d of %d", len(g.Calls())-5, sends)
	require.Equal(t, map[string]int{"handed_off": 4 + 1 + sends}, outboxStates(t, env, tenant.ID))
	elapsed := time.Since(begin)
	renewals := g.TokenRequests() - tokensBefore
	var perProc [2]float64
	for i, p := range procs {
		perProc[i] = scrapeCounter(t, strings.Replace(p.ready, "/readyz", "/metrics", 1),
			`mio_credential_renewals_total{channel_type="google_chat",outcome="renewed"}`)
	}
	limit := int(math.Ceil(elapsed.Seconds()/(0.8*lifetime.Seconds()))) + 1
	t.Logf("%d sends in %s: %d token requests (limit %d), renewals per replica %v, 401s %d",
		sends, elapsed.Round(time.Millisecond), renewals, limit, perProc, g.Refused()-refusedBefore)
	require.Zero(t, g.Refused()-refusedBefore, "no send went with an expired token")
	require.LessOrEqual(t, renewals, limit, "renewed about once per 80 %% of the lifetime, in total")
	require.Equal(t, float64(g.TokenRequests()), perProc[0]+perProc[1], "every token request was one replica's renewal")

	// The key is deleted: the next renewal is refused and the account
	// disabled with the reason.
	g.Revoke()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		row, err := svc.AccountShow(ctx, tenant.ID, acct.ID)
		require.NoError(t, err)
		if row.Status == db.AccountDisabled {
			require.Equal(t, "google service-account key refused: invalid_grant", row.DisabledReason)
			break
		}
		require.True(t, time.Now().Before(deadline), "the account was not disabled after its key was deleted")
		_, _ = send(i%2, map[string]any{"idempotency_key": fmt.Sprintf("revoked-%d", i), "account_id": acct.ID,
			"conversation_id": "spaces/S2", "text": "after the key was deleted"})
		time.Sleep(200 * time.Millisecond)
	}
}
