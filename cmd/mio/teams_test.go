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

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/secretbox"
)

// teamsCalls are the fake Bot Connector's calls as platform calls: PUT is
// an edit.
func teamsCalls(f *channelstest.FakeTeams) []platformCall {
	var out []platformCall
	for _, c := range f.Calls() {
		pc := platformCall{Channel: "teams", Op: "send", Conversation: c.Path, Text: fmt.Sprint(c.Activity["text"])}
		switch c.Method {
		case http.MethodPut:
			pc.Op = "edit"
		case http.MethodDelete:
			pc.Op = "delete"
		}
		out = append(out, pc)
	}
	return out
}

// teamsActivity is a testdata activity whose serviceUrl is the fake's
// regional service URL (URL/amer/).
func (e *e2e) teamsActivity(t *testing.T, name string) []byte {
	t.Helper()
	return bytes.ReplaceAll(readTestdata(t, "teams", name), []byte("https://smba.trafficmanager.net/amer/"), []byte(e.teams.URL+"/amer/"))
}

// postTeams POSTs an activity to the Teams account's webhook with the
// Authorization value auth and returns the status.
func (e *e2e) postTeams(t *testing.T, body []byte, auth string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.public+"/webhooks/teams/"+e.accounts["teams"].String(), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestTeamsEndToEnd: `mio serve` against a fake Bot Framework. A signed
// activity becomes one envelope; forged, expired and wrong-audience
// tokens are answered 401 and store nothing; replies reach the fake once
// each, in order, at the activity's serviceUrl, the fake's 429
// Retry-After honoured; an inbound edit
// points at its original and an outbound edit is a PUT.
func TestTeamsEndToEnd(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	fake := e.teams

	body := e.teamsActivity(t, "message_channel_thread_mention.json")
	now := time.Now()
	for name, auth := range map[string]string{
		"forged":         fake.Sign(t, body, now, channelstest.TokenOptions{Forged: true}),
		"expired":        fake.Sign(t, body, now, channelstest.TokenOptions{Lifetime: -10 * time.Minute}),
		"wrong audience": fake.Sign(t, body, now, channelstest.TokenOptions{Audience: "another-bot"}),
		"no token":       "",
	} {
		require.Equal(t, http.StatusUnauthorized, e.postTeams(t, body, auth), name)
	}
	require.Equal(t, http.StatusOK, e.postTeams(t, body, fake.Sign(t, body, now, channelstest.TokenOptions{})))
	require.Equal(t, http.StatusOK, e.postTeams(t, body, fake.Sign(t, body, now, channelstest.TokenOptions{})), "a redelivery")
	msg := e.pull(t, "teams")
	require.Equal(t, "1714564790123", msg.SourceMessageID)
	require.Equal(t, "19:7e8d0b3c2a1f4e6b9d5c8a7f6e5d4c3b@thread.tacv2", msg.Conversation.ID)
	require.Equal(t, "1714564700001", msg.ThreadID)
	require.Equal(t, "can you summarise this thread for @Megan Bowen?", msg.Text)

	// The edit of that message: the next (and only other) Teams message,
	// so neither the refused requests nor the redelivery stored one.
	edit := e.teamsActivity(t, "message_update.json")
	require.Equal(t, http.StatusOK, e.postTeams(t, edit, fake.Sign(t, edit, time.Now(), channelstest.TokenOptions{})))
	got := e.pull(t, "teams")
	require.True(t, got.Edited)
	require.NotNil(t, got.EditOf)
	require.NotNil(t, got.EditOf.ID, "the original was stored: its MIO id")
	require.Equal(t, msg.ID, *got.EditOf.ID)

	// Three replies in the thread; the first call is throttled.
	fake.RateLimitNext(1, 1)
	before := len(fake.Calls())
	var ids []uuid.UUID
	for i := range 3 {
		ids = append(ids, e.send(t, map[string]any{"idempotency_key": fmt.Sprintf("teams-order-%d", i), "account_id": e.accounts["teams"],
			"conversation_id": msg.Conversation.ID, "thread_id": msg.ThreadID, "text": fmt.Sprintf("in order %d", i)}))
	}
	calls := fake.Calls()[before:]
	require.Len(t, calls, 3, "each reply reached the fake once")
	for i, c := range calls {
		require.Equal(t, fmt.Sprintf("in order %d", i), c.Activity["text"])
		require.Equal(t, http.MethodPost, c.Method)
		require.Equal(t, "amer", c.Region, "the reply went to the activity's serviceUrl")
		require.True(t, strings.HasSuffix(c.Path, "/activities/1714564700001"), "a reply in the thread: %s", c.Path)
	}
	limited := fake.Limited()
	require.Len(t, limited, 1)
	require.GreaterOrEqual(t, calls[0].At.Sub(limited[0]), 900*time.Millisecond, "Retry-After: 1 honoured")

	e.send(t, map[string]any{"idempotency_key": "teams-order-edit", "account_id": e.accounts["teams"],
		"conversation_id": msg.Conversation.ID, "text": "in order 0, edited", "edit_of": ids[0]})
	last := fake.Calls()[len(fake.Calls())-1]
	require.Equal(t, http.MethodPut, last.Method)
	require.True(t, strings.HasSuffix(last.Path, "/activities/"+providerID(t, e, ids[0])), "an edit of the first reply: %s", last.Path)
	require.Equal(t, "in order 0, edited", last.Activity["text"])
}

// providerID reads an outbound message's provider message id.
func providerID(t *testing.T, e *e2e, id uuid.UUID) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.public+"/v1/outbound/"+id.String(), nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		ProviderMessageID string `json:"provider_message_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.ProviderMessageID
}

// TestTeamsTokensRenewedAcrossReplicas: two `mio serve` processes send for
// a Teams account to a fake Bot Connector whose client-credentials tokens
// live 2 seconds. No send is refused for an expired token, and the token
// is renewed about once per 80 % of its lifetime in total, not per
// process.
func TestTeamsTokensRenewedAcrossReplicas(t *testing.T) {
	t.Parallel()
	const lifetime, duration, sends = 2 * time.Second, 12 * time.Second, 120
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	registry := builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	svc := admin.New(env.Pool, box, "http://mio.test").WithRegistry(registry)
	tenant, _, err := svc.TenantCreate(ctx, "teams-tokens")
	require.NoError(t, err)
	fake := channelstest.NewFakeTeams(t, lifetime)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "teams", ExternalID: fake.AppID,
		Settings: fake.Settings(), Credentials: fake.Credentials()})
	require.NoError(t, err)
	require.Equal(t, "teams client credentials: renewed by MIO", acct.CredentialRenewal)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	procEnv := []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
		"MIO_API_ALLOW_HTTP_HOSTS=127.0.0.1", "MIO_LOG_LEVEL=error", "MIO_BLOB_URL=file://" + t.TempDir()}
	procs := []*chaosProc{newChaosProc(t, "mio-a", "all", procEnv), newChaosProc(t, "mio-b", "all", procEnv)}
	for _, p := range procs {
		require.NoError(t, p.start(60*time.Second))
		t.Cleanup(p.kill)
	}

	client := &http.Client{Timeout: 10 * time.Second}
	send := func(i int) (int, error) {
		body, _ := json.Marshal(map[string]any{"idempotency_key": fmt.Sprintf("send-%d", i), "account_id": acct.ID,
			"conversation_id": fmt.Sprintf("19:conv%d@thread.tacv2", i%8), "text": fmt.Sprintf("message %d", i)})
		req, _ := http.NewRequest(http.MethodPost, procs[i%2].public+"/v1/outbound", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	begin := time.Now()
	every := duration / sends
	var wg sync.WaitGroup
	for i := range sends {
		time.Sleep(time.Until(begin.Add(time.Duration(i) * every)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := send(i)
			require.NoError(t, err)
			require.Less(t, code, 300, "send %d", i)
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool { return len(fake.Calls()) >= sends }, 30*time.Second, 50*time.Millisecond,
		"sent %d of %d", len(fake.Calls()), sends)
	require.Equal(t, map[string]int{"handed_off": sends}, outboxStates(t, env, tenant.ID))
	elapsed := time.Since(begin)

	total := fake.TokenRequests()
	limit := int(math.Ceil(elapsed.Seconds()/(0.8*lifetime.Seconds()))) + 1
	perProc := make([]float64, len(procs))
	for i, p := range procs {
		perProc[i] = scrapeCounter(t, strings.Replace(p.ready, "/readyz", "/metrics", 1),
			`mio_credential_renewals_total{channel_type="teams",outcome="renewed"}`)
	}
	t.Logf("%d sends in %s, %d token requests (limit %d), renewals per replica %v, refused 401: %d",
		len(fake.Calls()), elapsed.Round(time.Second), total, limit, perProc, fake.Refused())
	require.Zero(t, fake.Refused(), "no send went with an expired token")
	require.LessOrEqual(t, total, limit, "renewed about once per 80 %% of the lifetime, in total")
	require.Equal(t, float64(total), perProc[0]+perProc[1], "every token request was one replica's renewal")
	require.Len(t, fake.Calls(), sends, "each send reached the fake once")
}
