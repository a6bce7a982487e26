package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// AdminOptions configure the admin benchmark.
type AdminOptions struct {
	Messages    int // inbox rows seeded (webhook, one account); default 1,000,000
	Consumers   int // consumers created, each Messages behind; default 100
	DeadLetters int // dead outbound rows seeded; default 10,000
	Requests    int // requests per endpoint; default 200
	Clients     int // concurrent clients per endpoint; default 4
}

// AdminEndpoint is one call's figures.
type AdminEndpoint struct {
	Name          string
	Path          string
	Requests      int
	Failed        int
	FirstError    string
	P50, P99, Max time.Duration
}

// AdminResult holds the figures of one run.
type AdminResult struct {
	Messages, Consumers, DeadLetters int
	SeedTime                         time.Duration
	// QueueHealth: SELECT * FROM mio.queue_health, run Requests times
	// under the tenant, every answer's pending checked exact.
	QueueHealth QueueHealthFigures
	Endpoints   []AdminEndpoint
}

// QueueHealthFigures are the latencies of mio.queue_health over the
// seeded consumers.
type QueueHealthFigures struct {
	Queries  int
	Checked  int // consumer rows whose pending was checked
	P50, P95 time.Duration
	Max      time.Duration
}

// Admin seeds a tenant with Messages inbox rows (and a tenth as many of
// another account and channel type), Consumers consumers each Messages
// behind or more — a third unfiltered, a third filtered by channel type, a
// third by account — and DeadLetters dead outbound messages. It runs
// SELECT * FROM mio.queue_health Requests times, failing when any
// consumer's pending is not exactly its backlog, and reports p50/p95
// (target: p95 <= 50 ms); then calls every admin API list call and every
// console page Requests times from Clients clients and reports their
// latency percentiles (target: p99 <= 200 ms each).
func Admin(ctx context.Context, env *Env, opts AdminOptions) (*AdminResult, error) {
	if opts.Messages == 0 {
		opts.Messages = 1_000_000
	}
	if opts.Consumers == 0 {
		opts.Consumers = 100
	}
	if opts.DeadLetters == 0 {
		opts.DeadLetters = 10_000
	}
	if opts.Requests == 0 {
		opts.Requests = 200
	}
	if opts.Clients == 0 {
		opts.Clients = 4
	}
	res := &AdminResult{Messages: opts.Messages, Consumers: opts.Consumers, DeadLetters: opts.DeadLetters}
	seeded := time.Now()
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 2, StatementTimeout: -1})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	box, _ := secretbox.New(env.MasterKey)
	svc := admin.New(pool, box, env.BaseURL)
	tenant, _, err := svc.TenantCreate(ctx, tenantName("bench-admin"))
	if err != nil {
		return nil, err
	}
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook",
		WebhookSecret: "whsec_YmVuY2gtYWRtaW4tc2VjcmV0LTMyLWJ5dGVzLWxvbmch"})
	if err != nil {
		return nil, err
	}
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "bench-admin", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	if err != nil {
		return nil, err
	}
	adminToken, _, err := svc.AdminTokenCreate(ctx, admin.AdminTokenCreateParams{Name: "bench-admin",
		Roles: []db.AdminRole{db.AdminRoleViewer, db.AdminRoleOperator, db.AdminRoleCredentialAdmin}, TTL: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	other, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "slack"})
	if err != nil {
		return nil, err
	}
	others := opts.Messages / 10
	if err := insertReadyOf(ctx, env, tenant.ID, acct.ID, "webhook", opts.Messages); err != nil {
		return nil, err
	}
	if err := insertReadyOf(ctx, env, tenant.ID, other.ID, "slack", others); err != nil {
		return nil, err
	}
	if err := env.Exec(ctx, fmt.Sprintf(`
		INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key, request_sha256, text,
			handoff_state, attempts, last_error, dead_at, created_at, updated_at)
		SELECT '%[1]s', gen_random_uuid(), '%[2]s', 'webhook', 'conv-' || (g %% 100), 'dead-' || g, '\x00'::bytea, 'a reply that failed',
			'dead', 5, 'webhook: 400 Bad Request: the endpoint refused the message', now() - (g || ' s')::interval, now() - (g || ' s')::interval, now()
		FROM generate_series(1, %[3]d) AS g;
		ANALYZE mio.outbox`, tenant.ID, acct.ID, opts.DeadLetters)); err != nil {
		return nil, fmt.Errorf("seed dead letters: %w", err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	// Unfiltered consumers are behind by every message; those filtered
	// by channel type (webhook) or account (acct) by the first account's.
	want := map[string]int64{}
	for i := range opts.Consumers {
		name, body := fmt.Sprintf("bench-%03d", i), `{"deliver_policy":"all","ack_wait":"30s"}`
		want[name] = int64(opts.Messages + others)
		switch i % 3 {
		case 1:
			body, want[name] = `{"deliver_policy":"all","ack_wait":"30s","filter":{"channel_types":["webhook"]}}`, int64(opts.Messages)
		case 2:
			body = fmt.Sprintf(`{"deliver_policy":"all","ack_wait":"30s","filter":{"account_ids":[%q]}}`, acct.ID)
			want[name] = int64(opts.Messages)
		}
		if err := call(ctx, client, http.MethodPut, env.BaseURL+"/v1/consumers/"+name, "Bearer "+token, "", body, nil); err != nil {
			return nil, fmt.Errorf("create consumer: %w", err)
		}
	}
	// Worker processes fold the count deltas every 2 s; fold now.
	if _, err := db.StreamCountsFold(ctx, pool); err != nil {
		return nil, fmt.Errorf("fold stream counts: %w", err)
	}
	// A message, a dead letter and a consumer to show one of.
	var page struct {
		Items []struct {
			ID       uuid.UUID `json:"id"`
			TenantID uuid.UUID `json:"tenant_id"`
		} `json:"items"`
	}
	if err := call(ctx, client, http.MethodGet, env.AdminURL+"/admin/v1/dead-letters?limit=1", "Bearer "+adminToken, "", "", &page); err != nil || len(page.Items) == 0 {
		return nil, fmt.Errorf("find a dead letter: %v", err)
	}
	deadID := page.Items[0].ID
	var msgID uuid.UUID
	if err := pool.QueryRow(ctx, "SELECT id FROM mio.inbox WHERE tenant_id = $1 ORDER BY id DESC LIMIT 1", tenant.ID).Scan(&msgID); err != nil {
		return nil, fmt.Errorf("find a message: %w", err)
	}
	res.SeedTime = time.Since(seeded)
	if res.QueueHealth, err = measureQueueHealth(ctx, pool, tenant.ID, want, opts.Requests); err != nil {
		return res, err
	}

	t := tenant.ID.String()
	api := func(name, path string) AdminEndpoint {
		return AdminEndpoint{Name: "api " + name, Path: env.AdminURL + path}
	}
	page1 := func(name, path string) AdminEndpoint {
		return AdminEndpoint{Name: "console " + name, Path: env.AdminURL + path}
	}
	endpoints := []AdminEndpoint{
		api("tenants", "/admin/v1/tenants"),
		api("tenant", "/admin/v1/tenants/"+t),
		api("accounts", "/admin/v1/tenants/"+t+"/accounts"),
		api("account", "/admin/v1/accounts/"+acct.ID.String()),
		api("tokens", "/admin/v1/tenants/"+t+"/tokens"),
		api("admin tokens", "/admin/v1/admin-tokens"),
		api("consumers (100 per page)", "/admin/v1/consumers?limit=100"),
		api("consumer", "/admin/v1/tenants/"+t+"/consumers/"+fmt.Sprintf("bench-%03d", opts.Consumers/2)),
		api("queue health", "/admin/v1/queue-health"),
		api("dead letters", "/admin/v1/dead-letters"),
		api("dead letter", "/admin/v1/dead-letters/"+deadID.String()),
		api("outbound search", "/admin/v1/tenants/"+t+"/outbound?state=dead"),
		api("audit", "/admin/v1/audit"),
		page1("overview", "/"),
		page1("accounts", "/accounts?tenant_id="+t),
		page1("consumers", "/consumers?tenant_id="+t),
		page1("messages", "/messages?tenant_id="+t),
		page1("message", "/messages/"+t+"/"+msgID.String()),
		page1("outbound", "/outbound?tenant_id="+t),
		page1("outbound send", "/outbound/"+t+"/"+deadID.String()),
		page1("dead letters", "/dead-letters"),
		page1("dead letter", "/dead-letters/"+t+"/"+deadID.String()),
		page1("audit", "/audit"),
		page1("tail", "/tail?tenant_id="+t),
	}
	for _, ep := range endpoints {
		auth, cookie := "Bearer "+adminToken, ""
		if strings.HasPrefix(ep.Name, "console ") {
			auth, cookie = "", "mio_console="+adminToken
		}
		res.Endpoints = append(res.Endpoints, measureEndpoint(ctx, client, ep, auth, cookie, opts.Requests, opts.Clients))
	}
	return res, nil
}

// measureQueueHealth runs SELECT * FROM mio.queue_health requests times
// under the tenant, one at a time, and checks every consumer row's pending
// against want (an error at the first difference).
func measureQueueHealth(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, want map[string]int64, requests int) (QueueHealthFigures, error) {
	var (
		out  QueueHealthFigures
		lats []time.Duration
	)
	for range requests {
		var (
			lat  time.Duration
			seen int
		)
		err := db.InTenantTx(ctx, pool, tenantID, func(tx pgx.Tx) error {
			start := time.Now()
			rows, err := tx.Query(ctx, "SELECT * FROM mio.queue_health")
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				v, err := rows.Values()
				if err != nil {
					return err
				}
				kind, _ := v[0].(string)
				name, _ := v[2].(string)
				pending, _ := v[4].(int64)
				if kind != "consumer" {
					continue
				}
				w, ok := want[name]
				if !ok {
					continue
				}
				if pending != w {
					return fmt.Errorf("mio.queue_health: consumer %s pending %d, want %d (not exact)", name, pending, w)
				}
				seen++
			}
			lat = time.Since(start)
			return rows.Err()
		})
		if err != nil {
			return out, fmt.Errorf("bench admin: %w", err)
		}
		if seen != len(want) {
			return out, fmt.Errorf("bench admin: mio.queue_health showed %d of the %d consumers", seen, len(want))
		}
		out.Queries++
		out.Checked += seen
		lats = append(lats, lat)
	}
	SortDurations(lats)
	out.P50, out.P95 = Percentile(lats, 50), Percentile(lats, 95)
	if len(lats) > 0 {
		out.Max = lats[len(lats)-1]
	}
	return out, nil
}

// measureEndpoint GETs ep.Path requests times from clients clients.
func measureEndpoint(ctx context.Context, client *http.Client, ep AdminEndpoint, auth, cookie string, requests, clients int) AdminEndpoint {
	var (
		mu   sync.Mutex
		lats []time.Duration
		wg   sync.WaitGroup
		next = make(chan struct{}, requests)
	)
	for range requests {
		next <- struct{}{}
	}
	close(next)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				start := time.Now()
				err := call(ctx, client, http.MethodGet, ep.Path, auth, cookie, "", nil)
				lat := time.Since(start)
				mu.Lock()
				if err != nil {
					ep.Failed++
					if ep.FirstError == "" {
						ep.FirstError = err.Error()
					}
				} else {
					lats = append(lats, lat)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	ep.Requests = len(lats)
	SortDurations(lats)
	ep.P50, ep.P99 = Percentile(lats, 50), Percentile(lats, 99)
	if len(lats) > 0 {
		ep.Max = lats[len(lats)-1]
	}
	return ep
}

// call makes one request and decodes a 2xx JSON answer into out (when
// set); any other status is an error.
func call(ctx context.Context, client *http.Client, method, url, auth, cookie, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %.200s", method, url, resp.Status, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// Print writes the result as a small report.
func (r *AdminResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench admin — %d inbox rows, %d consumers, %d dead letters (seeded in %s)\n",
		r.Messages, r.Consumers, r.DeadLetters, r.SeedTime.Round(time.Second))
	q := r.QueueHealth
	fmt.Fprintf(w, "  SELECT * FROM mio.queue_health: %d queries, p50 %s p95 %s max %s (target p95 <= 50ms); pending exact in all %d consumer rows\n",
		q.Queries, q.P50.Round(10*time.Microsecond), q.P95.Round(10*time.Microsecond), q.Max.Round(10*time.Microsecond), q.Checked)
	fmt.Fprintf(w, "  %-34s %8s %10s %10s %10s\n", "call", "requests", "p50", "p99", "max")
	worst := time.Duration(0)
	for _, e := range r.Endpoints {
		flag := ""
		if e.Failed > 0 {
			flag = fmt.Sprintf("  (%d failed: %.160s)", e.Failed, e.FirstError)
		}
		fmt.Fprintf(w, "  %-34s %8d %10s %10s %10s%s\n", e.Name, e.Requests, e.P50.Round(10*time.Microsecond),
			e.P99.Round(10*time.Microsecond), e.Max.Round(10*time.Microsecond), flag)
		worst = max(worst, e.P99)
	}
	fmt.Fprintf(w, "  worst p99 %s   (target <= 200ms for every call)\n", worst.Round(10*time.Microsecond))
}
