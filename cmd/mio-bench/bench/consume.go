package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// ConsumeOptions configure the consume benchmark.
type ConsumeOptions struct {
	Preload     int           // ready messages preloaded; default 200k
	Pullers     int           // concurrent pullers; default 8
	Batch       int           // pull batch; default 100
	E2ERate     int           // webhooks per second for the latency phase; default 500
	E2EDuration time.Duration // default 10s
	SkipPgbench bool
	// CPUProfile, when set, is where the server's CPU profile of the first
	// 5 s of the drain is written.
	CPUProfile string
}

// ConsumeResult holds the figures of one run.
type ConsumeResult struct {
	Messages             int
	Elapsed              time.Duration
	PerSec               float64
	PullP50, PullP99     time.Duration
	E2ECount             int
	E2EP50, E2EP99       time.Duration
	E2ESentRate          float64
	ReferencePerSec      float64
	ReferenceDescription string
}

// Consume preloads ready messages, drains them with concurrent pullers
// that pull and ack over HTTP, then measures webhook-commit-to-pull
// latency at a steady rate; the reference is pgbench's SKIP LOCKED
// claim-then-delete of the same batch size at the same client count.
func Consume(ctx context.Context, env *Env, opts ConsumeOptions) (*ConsumeResult, error) {
	if opts.Preload == 0 {
		opts.Preload = 200_000
	}
	if opts.Pullers == 0 {
		opts.Pullers = 8
	}
	if opts.Batch == 0 {
		opts.Batch = 100
	}
	if opts.E2ERate == 0 {
		opts.E2ERate = 500
	}
	if opts.E2EDuration == 0 {
		opts.E2EDuration = 10 * time.Second
	}
	cs, err := newConsumerSetup(ctx, env, "bench-consume")
	if err != nil {
		return nil, err
	}
	defer cs.pool.Close()
	tenant, acct, secret, c := cs.tenant, cs.account, cs.secret, cs.client

	if err := preload(ctx, env, tenant.ID, acct.ID, opts.Preload); err != nil {
		return nil, err
	}

	res := &ConsumeResult{}
	profiled := env.profileAfter(ctx, 0, 5*time.Second, opts.CPUProfile)
	n, elapsed, lats, err := drain(ctx, c, "bench", opts.Preload, opts.Pullers, opts.Batch)
	if err != nil {
		return nil, err
	}
	if err := profiled(); err != nil {
		return nil, err
	}
	res.Elapsed = elapsed
	res.Messages = n
	res.PerSec = float64(res.Messages) / res.Elapsed.Seconds()
	SortDurations(lats)
	res.PullP50, res.PullP99 = Percentile(lats, 50), Percentile(lats, 99)

	// End to end: webhooks at a steady rate; one long-polling puller.
	if err := e2e(ctx, env, c, acct.ID, secret, opts, res); err != nil {
		return res, err
	}

	if !opts.SkipPgbench {
		res.ReferenceDescription = fmt.Sprintf("pgbench, %d clients: SKIP LOCKED claim of %d with a 30 s lease (one transaction), then delete by ids (another)", opts.Pullers, opts.Batch)
		if err := env.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS bench_ref;
			DROP TABLE IF EXISTS bench_ref.q;
			CREATE TABLE bench_ref.q (id bigserial PRIMARY KEY, vt timestamptz NOT NULL DEFAULT now(), read_ct int NOT NULL DEFAULT 0, message jsonb NOT NULL);
			INSERT INTO bench_ref.q (message) SELECT jsonb_build_object('text', repeat('x', 300), 'n', g) FROM generate_series(1, 1000000) g;
			ANALYZE bench_ref.q`); err != nil {
			return res, err
		}
		script := fmt.Sprintf(`WITH c AS (SELECT id FROM bench_ref.q WHERE vt <= now() ORDER BY id LIMIT %d FOR UPDATE SKIP LOCKED),
u AS (UPDATE bench_ref.q AS q SET vt = now() + interval '30 seconds', read_ct = q.read_ct + 1 FROM c WHERE q.id = c.id RETURNING q.id, q.message)
SELECT coalesce(array_agg(id), '{}') AS ids FROM u \gset
DELETE FROM bench_ref.q WHERE id = ANY (:ids::bigint[]);
`, opts.Batch)
		tps, err := env.Pgbench(ctx, script, opts.Pullers, 5*time.Second)
		if err != nil {
			return res, err
		}
		res.ReferencePerSec = tps * float64(opts.Batch)
		_ = env.Exec(ctx, "DROP SCHEMA bench_ref CASCADE")
	}
	return res, nil
}

func e2e(ctx context.Context, env *Env, c *client.Client, accountID uuid.UUID, secret string, opts ConsumeOptions, res *ConsumeResult) error {
	url := env.BaseURL + "/webhooks/webhook/" + accountID.String()
	var (
		mu      sync.Mutex
		acked   = map[string]time.Time{} // source id -> webhook answered 200 (committed)
		lats    []time.Duration
		sent    atomic.Int64
		stopped atomic.Bool
		wg      sync.WaitGroup
	)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for pctx.Err() == nil {
			ds, err := c.Pull(pctx, "bench", 100, 5*time.Second)
			now := time.Now()
			if err != nil {
				return
			}
			ids := make([]uuid.UUID, 0, len(ds))
			mu.Lock()
			for _, d := range ds {
				ids = append(ids, d.DeliveryID)
				if at, ok := acked[d.Message.SourceMessageID]; ok {
					lats = append(lats, now.Sub(at))
				}
			}
			mu.Unlock()
			if len(ids) > 0 {
				_, _ = c.Ack(context.WithoutCancel(pctx), "bench", ids...)
			}
		}
	}()
	began := time.Now()
	sent.Store(int64(webhookLoad(url, secret, opts.E2ERate, opts.E2EDuration, func(id string) {
		mu.Lock()
		acked[id] = time.Now()
		mu.Unlock()
	})))
	res.E2ESentRate = float64(sent.Load()) / time.Since(began).Seconds()
	// Let the last deliveries arrive.
	waitUntil := time.Now().Add(5 * time.Second)
	for time.Now().Before(waitUntil) && !stopped.Load() {
		mu.Lock()
		n := len(lats)
		mu.Unlock()
		if n >= int(sent.Load()) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	SortDurations(lats)
	res.E2ECount = len(lats)
	res.E2EP50, res.E2EP99 = Percentile(lats, 50), Percentile(lats, 99)
	return nil
}

// Print writes the report.
func (r *ConsumeResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench consume — pull batch 100 + ack over HTTP\n")
	fmt.Fprintf(w, "  messages/s        %10.0f   (%d messages in %s)\n", r.PerSec, r.Messages, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  pull p50          %10s\n", r.PullP50.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  pull p99          %10s\n", r.PullP99.Round(10*time.Microsecond))
	fmt.Fprintf(w, "end to end (webhook answered 200 -> pull returns), %.0f msg/s sent, %d measured\n", r.E2ESentRate, r.E2ECount)
	fmt.Fprintf(w, "  e2e p50           %10s   (target <= 5ms)\n", r.E2EP50.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  e2e p99           %10s   (target <= 50ms)\n", r.E2EP99.Round(10*time.Microsecond))
	if r.ReferencePerSec > 0 {
		fmt.Fprintf(w, "reference: %s\n", r.ReferenceDescription)
		fmt.Fprintf(w, "  pgbench msgs/s    %10.0f\n", r.ReferencePerSec)
		fmt.Fprintf(w, "  ratio mio/pgbench %10.2f   (target >= 0.60; >= 10,000 msg/s)\n", r.PerSec/r.ReferencePerSec)
	}
}

// drain pulls and acks total messages of consumer over HTTP with pullers
// concurrent pullers of batch messages, and returns how many it took, how
// long, and each pull's latency.
func drain(ctx context.Context, c *client.Client, consumer string, total, pullers, batch int) (int, time.Duration, []time.Duration, error) {
	var (
		taken atomic.Int64
		mu    sync.Mutex
		lats  []time.Duration
		wg    sync.WaitGroup
		errs  atomic.Value
	)
	start := time.Now()
	for range pullers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			for taken.Load() < int64(total) && ctx.Err() == nil {
				t0 := time.Now()
				ds, err := c.Pull(ctx, consumer, batch, 0)
				local = append(local, time.Since(t0))
				if err != nil {
					errs.Store(err)
					return
				}
				if len(ds) == 0 {
					continue
				}
				ids := make([]uuid.UUID, len(ds))
				for i, d := range ds {
					ids[i] = d.DeliveryID
				}
				if _, err := c.Ack(ctx, consumer, ids...); err != nil {
					errs.Store(err)
					return
				}
				taken.Add(int64(len(ds)))
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err, _ := errs.Load().(error); err != nil {
		return 0, 0, nil, err
	}
	return int(taken.Load()), time.Since(start), lats, nil
}

// consumerSetup is a tenant with a webhook account (signing secret known)
// and a consumer "bench" pulled through the HTTP client.
type consumerSetup struct {
	pool    *pgxpool.Pool
	tenant  *db.Tenant
	account *admin.AccountInfo
	secret  string
	client  *client.Client
}

func newConsumerSetup(ctx context.Context, env *Env, name string) (*consumerSetup, error) {
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 4, RuntimeRole: "mio_runtime", StatementTimeout: -1})
	if err != nil {
		return nil, err
	}
	cs := &consumerSetup{pool: pool, secret: "whsec_" + strings.Repeat("QUJD", 8)}
	if err := cs.init(ctx, env, name); err != nil {
		pool.Close()
		return nil, err
	}
	return cs, nil
}

func (cs *consumerSetup) init(ctx context.Context, env *Env, name string) error {
	box, _ := secretbox.New(env.MasterKey)
	svc := admin.New(cs.pool, box, env.BaseURL)
	var err error
	if cs.tenant, _, err = svc.TenantCreate(ctx, tenantName(name)); err != nil {
		return err
	}
	if cs.account, err = svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: cs.tenant.ID, ChannelType: "webhook", WebhookSecret: cs.secret}); err != nil {
		return err
	}
	token, _, err := svc.TokenCreate(ctx, cs.tenant.ID, "bench", []db.Role{db.RoleConsume})
	if err != nil {
		return err
	}
	cs.client = client.New(env.BaseURL, token, client.WithHTTPClient(&http.Client{Timeout: 90 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64}}))
	_, err = cs.client.PutConsumer(ctx, "bench", client.ConsumerConfig{MaxAckPending: 100000})
	return err
}

// preload commits total ready messages of account in the tenant
// (insertReady), archived already.
func preload(ctx context.Context, env *Env, tenantID, accountID uuid.UUID, total int) error {
	// They start archived (the tenant's archive position is after the
	// preload): a live inbox is archived every MIO_ARCHIVE_INTERVAL as it
	// fills, so a 200k-row archive catch-up running during the drain would
	// measure the preload shortcut, not the consumers (it roughly halves
	// the drain rate here: docs/benchmarks.md).
	if err := insertReady(ctx, env, tenantID, accountID, total); err != nil {
		return err
	}
	if err := env.Exec(ctx, fmt.Sprintf(`
		INSERT INTO mio.archive_cursors (tenant_id, log_lo) VALUES ('%[1]s', pg_current_snapshot())
		ON CONFLICT (tenant_id) DO UPDATE SET log_lo = excluded.log_lo, log_hi = NULL, ready_xid = '0', ready_seq = 0`, tenantID)); err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	return nil
}

// webhookLoad posts signed webhooks to url at rate per second for d, each
// with a unique webhook id; answered calls acked(id) once the webhook was
// answered 200 (committed). It returns how many were.
func webhookLoad(url, secret string, rate int, d time.Duration, acked func(id string)) int {
	var sent atomic.Int64
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	interval := time.Second / time.Duration(rate)
	tick := time.NewTicker(interval)
	deadline := time.Now().Add(d)
	began := time.Now()
	var senders sync.WaitGroup
	for i := 0; time.Now().Before(deadline); i++ {
		<-tick.C
		senders.Add(1)
		go func() {
			defer senders.Done()
			id := fmt.Sprintf("e2e_%d_%d", began.UnixNano(), i)
			body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":"e2e-%d"},"sender":{"id":"u"},"text":"hi"}}`,
				time.Now().UTC().Format(time.RFC3339), i%20))
			now := time.Now()
			sig, _ := webhook.Sign(secret, id, now, body)
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("webhook-id", id)
			req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
			req.Header.Set("webhook-signature", sig)
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				acked(id)
				sent.Add(1)
			}
		}()
	}
	tick.Stop()
	senders.Wait()
	return int(sent.Load())
}

// insertReady inserts n ready messages of account in the tenant, in
// statements of 50k, then analyzes the inbox. Their ids are UUIDv7 of the
// insert time, like ingest's: they go to the live day partition.
func insertReady(ctx context.Context, env *Env, tenantID, accountID uuid.UUID, n int) error {
	return insertReadyOf(ctx, env, tenantID, accountID, "webhook", n)
}

// insertReadyOf is insertReady for messages of a channel type.
func insertReadyOf(ctx context.Context, env *Env, tenantID, accountID uuid.UUID, channelType string, n int) error {
	for done := 0; done < n; done += 50_000 {
		k := min(50_000, n-done)
		err := env.Exec(ctx, fmt.Sprintf(`
			SELECT set_config('app.current_tenant_id', '%[1]s', false);
			WITH ids AS (SELECT `+uuidV7SQL("clock_timestamp()")+` AS id, g FROM generate_series(1, %[3]d) AS g)
			INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, source_message_id, conversation_id, state, envelope, raw, received_at, ready_xid, ready_seq, ready_at)
			SELECT '%[1]s', id, '%[2]s', '%[4]s', 'pre-' || id, 'conv-' || (g %% 100), 'ready',
			       jsonb_build_object('id', id, 'tenant_id', '%[1]s', 'account_id', '%[2]s', 'channel_type', '%[4]s',
			         'source_message_id', 'pre-' || id, 'conversation', jsonb_build_object('id', 'conv-' || (g %% 100), 'type', 'dm'),
			         'sender', jsonb_build_object('id', 'u1', 'is_bot', false), 'text', repeat('x', 300), 'attachments', '[]'::jsonb,
			         'edited', false, 'deleted', false),
			       NULL, now(), pg_current_xact_id(), nextval('mio.inbox_ready_seq'), now()
			FROM ids`, tenantID, accountID, k, channelType))
		if err != nil {
			return fmt.Errorf("preload: %w", err)
		}
	}
	return env.Exec(ctx, "ANALYZE mio.inbox")
}
