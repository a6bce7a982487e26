package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/secretbox"
)

// cliqTokenRun is one configuration of TestCliqTokensRenewedAcrossReplicas:
// the fake's token lifetime, how long the sends last and how many.
type cliqTokenRun struct {
	lifetime, duration time.Duration
	sends              int
}

// cliqTokenRunFromEnv: 6-second tokens over 30 s in the suite;
// MIO_TEST_CLIQ_LONG=1 runs Zoho's shape at a minute's scale, 60-second
// tokens over five minutes.
func cliqTokenRunFromEnv() cliqTokenRun {
	if os.Getenv("MIO_TEST_CLIQ_LONG") == "1" {
		return cliqTokenRun{lifetime: time.Minute, duration: 5 * time.Minute, sends: 500}
	}
	return cliqTokenRun{lifetime: 6 * time.Second, duration: 30 * time.Second, sends: 500}
}

// TestCliqTokensRenewedAcrossReplicas: two `mio serve` processes on one
// database send for a Zoho Cliq account holding a refresh-token grant, to
// a fake Cliq API that accepts only unexpired tokens of a fake accounts
// server. Every send is handed off, and the token is renewed about once
// per 80 % of its lifetime in total, not per process. Then the refresh
// token is revoked: the account is disabled with the reason and Zoho gets
// no more token requests.
func TestCliqTokensRenewedAcrossReplicas(t *testing.T) {
	t.Parallel()
	run := cliqTokenRunFromEnv()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	registry := builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	svc := admin.New(env.Pool, box, "http://mio.test").WithRegistry(registry)
	tenant, _, err := svc.TenantCreate(ctx, "cliq-tokens")
	require.NoError(t, err)
	zoho := channelstest.NewFakeZoho(t, run.lifetime)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "zoho_cliq",
		Settings: json.RawMessage(`{"api_base_url":"` + zoho.URL + `"}`), Credentials: zoho.Credentials(), WebhookSecret: "cliq-shared"})
	require.NoError(t, err)
	require.Equal(t, "zoho refresh token: renewed by MIO", acct.CredentialRenewal)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	procEnv := []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
		"MIO_API_ALLOW_HTTP_HOSTS=127.0.0.1", "MIO_LOG_LEVEL=error", "MIO_BLOB_URL=file://" + t.TempDir()}
	procs := []*chaosProc{newChaosProc(t, "mio-a", "all", procEnv), newChaosProc(t, "mio-b", "all", procEnv)}
	for _, p := range procs {
		require.NoError(t, p.start(60*time.Second))
		t.Cleanup(p.kill)
	}

	// run.sends sends over run.duration, alternating between the replicas.
	client := &http.Client{Timeout: 10 * time.Second}
	send := func(i int) (int, error) {
		body, _ := json.Marshal(map[string]any{"idempotency_key": fmt.Sprintf("send-%d", i), "account_id": acct.ID,
			"conversation_id": fmt.Sprintf("chat-%d", i%8), "text": fmt.Sprintf("message %d", i)})
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
	every := run.duration / time.Duration(run.sends)
	var wg sync.WaitGroup
	for i := range run.sends {
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
	require.Eventually(t, func() bool { return zoho.Sent() >= run.sends }, 30*time.Second, 50*time.Millisecond,
		"sent %d of %d", zoho.Sent(), run.sends)
	states := outboxStates(t, env, tenant.ID)
	require.Equal(t, map[string]int{"handed_off": run.sends}, states)
	elapsed := time.Since(begin)

	total := zoho.TokenRequests()
	perProc := make([]float64, len(procs))
	for i, p := range procs {
		perProc[i] = scrapeCounter(t, strings.Replace(p.ready, "/readyz", "/metrics", 1),
			`mio_credential_renewals_total{channel_type="zoho_cliq",outcome="renewed"}`)
	}
	// A token every 80 % of its lifetime, the first one included.
	limit := int(math.Ceil(elapsed.Seconds()/(0.8*run.lifetime.Seconds()))) + 1
	t.Logf("%d sends in %s, %d token requests (limit %d), renewals per replica %v, sends refused 401: %d",
		zoho.Sent(), elapsed.Round(time.Second), total, limit, perProc, zoho.Refused())
	require.LessOrEqual(t, total, limit, "renewed about once per 80 %% of the lifetime, in total")
	require.Equal(t, float64(total), perProc[0]+perProc[1], "every token request was one replica's renewal")
	require.Zero(t, zoho.Refused(), "no send went with an expired token")

	// The refresh token is revoked: the next renewal is refused and the
	// account disabled with the reason. Sends keep coming until then.
	zoho.Revoke()
	revoked := zoho.TokenRequests()
	deadline := time.Now().Add(2*run.lifetime + 30*time.Second)
	var row *admin.AccountInfo
	for i := run.sends; ; i++ {
		row, err = svc.AccountShow(ctx, tenant.ID, acct.ID)
		require.NoError(t, err)
		if row.Status == db.AccountDisabled {
			break
		}
		require.True(t, time.Now().Before(deadline), "the account was not disabled after the refresh token was revoked")
		_, _ = send(i)
		time.Sleep(every * 4)
	}
	require.Equal(t, "zoho refresh token refused: invalid_code", row.DisabledReason)
	refusals := zoho.TokenRequests() - revoked
	// Sends after the refusal are refused by the API (the account is
	// disabled); Zoho is asked nothing more, by either replica.
	quiet := time.Now().Add(run.lifetime)
	for i := 1_000_000; time.Now().Before(quiet); i++ {
		code, err := send(i)
		require.NoError(t, err)
		if time.Since(quiet.Add(-run.lifetime)) > 2*accountsCacheTTL {
			require.GreaterOrEqual(t, code, 400, "a disabled account takes no sends")
		}
		time.Sleep(every * 4)
	}
	require.Equal(t, revoked+refusals, zoho.TokenRequests(), "no token request after the refusal")
	t.Logf("after revoking: %d refused token request(s), then none; disabled_reason %q", refusals, row.DisabledReason)
	require.LessOrEqual(t, refusals, 2)

	r := runMio(t, []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
		"MIO_API_ALLOW_HTTP_HOSTS=127.0.0.1"}, "admin", "account", "show", acct.ID.String())
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, `"disabled_reason": "zoho refresh token refused: invalid_code"`)
	require.Contains(t, r.stdout, `"credential_renewal": "zoho refresh token: renewed by MIO"`)
	require.NotContains(t, r.stdout, zoho.RefreshToken)
}

// accountsCacheTTL bounds how long a replica may still hold an account
// as active after another disabled it (accounts.CacheTTL).
const accountsCacheTTL = 5 * time.Second

// outboxStates counts the tenant's outbound messages by handoff state.
func outboxStates(t *testing.T, env *dbtest.Env, tenantID uuid.UUID) map[string]int {
	t.Helper()
	out := map[string]int{}
	require.Eventually(t, func() bool {
		clear(out)
		pending := false
		require.NoError(t, db.InTenantTx(context.Background(), env.Pool, tenantID, func(tx pgx.Tx) error {
			rows, err := tx.Query(context.Background(),
				`SELECT handoff_state::text, count(*) FROM mio.outbox WHERE tenant_id = $1 GROUP BY 1`, tenantID)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var state string
				var n int
				if err := rows.Scan(&state, &n); err != nil {
					return err
				}
				out[state] = n
				pending = pending || (state != "handed_off" && state != "dead")
			}
			return rows.Err()
		}))
		return !pending
	}, 30*time.Second, 100*time.Millisecond)
	return out
}

// scrapeCounter reads one sample of a Prometheus text exposition.
func scrapeCounter(t *testing.T, url, sample string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			require.NoError(t, err)
			return v
		}
	}
	return 0
}
