package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/slack"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// IngestOptions configure the ingest benchmark.
type IngestOptions struct {
	Clients  int           // concurrent HTTP clients; default 32
	Duration time.Duration // measured time; default 10s
	Warmup   time.Duration // unmeasured load first; default 2s
	// TextBytes is the message text size (the inbox row is ~1 KB with the
	// envelope). Default 700.
	TextBytes int
	// SkipPgbench skips the reference run.
	SkipPgbench bool
	// Loader is the load generator, LoaderRaw (default) or LoaderGo.
	Loader string
	// CPUProfile, when set, is where the server's CPU profile of the
	// measured phase is written.
	CPUProfile string
	// AllocsProfile, when set, is where the server's allocation profile is
	// written after the measured phase.
	AllocsProfile string
}

// IngestResult holds the figures of one run.
type IngestResult struct {
	Clients        int
	Loader         string
	Accepted       int64
	Failed         int64
	PerSec         float64
	P50, P99, Max  time.Duration
	RSS, PeakRSS   int64
	ReferenceTPS   float64
	ReferenceShape string
	// cpu and refCPU are where the machine's CPU went in the measured
	// phase and in the reference's; refTx is the reference's transactions.
	cpu, refCPU    cpuUse
	refTx          int64
	group0, group1 groupSnap
}

// Ingest drives signed Slack event_callback webhooks with unique event ids
// at the server from opts.Clients clients, then runs pgbench with the same
// transaction shape, one commit per request, at the same client count.
func Ingest(ctx context.Context, env *Env, opts IngestOptions) (*IngestResult, error) {
	if opts.Clients == 0 {
		opts.Clients = 32
	}
	if opts.Duration == 0 {
		opts.Duration = 10 * time.Second
	}
	if opts.Warmup == 0 {
		opts.Warmup = 2 * time.Second
	}
	if opts.TextBytes == 0 {
		opts.TextBytes = 700
	}
	var err error
	if opts.Loader, err = checkLoader(opts.Loader); err != nil {
		return nil, err
	}
	newRequest, accountID, err := slackWebhooks(ctx, env, opts.TextBytes)
	if err != nil {
		return nil, err
	}
	profiled := env.profileAfter(ctx, opts.Warmup, opts.Duration, opts.CPUProfile)
	f := runLoad(ctx, env, opts.Loader, "ingest", opts.Clients, opts.Warmup, opts.Duration, newRequest, func(status int) bool { return status == http.StatusOK })
	res := &IngestResult{Clients: opts.Clients, Loader: opts.Loader, Accepted: f.ok, Failed: f.failed, PerSec: f.perSec, P50: f.p50, P99: f.p99, Max: f.max, cpu: f.cpu, group0: f.group0, group1: f.group1}
	res.RSS, res.PeakRSS = env.ServerRSS()
	if err := profiled(); err != nil {
		return res, err
	}
	if opts.AllocsProfile != "" {
		if err := env.AllocsProfile(ctx, opts.AllocsProfile); err != nil {
			return res, err
		}
	}

	if !opts.SkipPgbench {
		res.ReferenceShape = "BEGIN; INSERT dedup row; INSERT ~1 KB inbox row; COMMIT;"
		if err := env.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS bench_ref;
			CREATE TABLE IF NOT EXISTS bench_ref.dedup (account_id uuid, source_message_id text, created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (account_id, source_message_id));
			CREATE TABLE IF NOT EXISTS bench_ref.inbox (id uuid PRIMARY KEY, envelope jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return res, err
		}
		row := strings.ReplaceAll(fmt.Sprintf(`{"channel_type":"slack","text":%q,"conversation":{"id":"C1","type":"channel"},"sender":{"id":"U1"}}`, loremText(opts.TextBytes)), "'", "''")
		script := fmt.Sprintf(`\set r random(1, 2000000000)
BEGIN;
INSERT INTO bench_ref.dedup (account_id, source_message_id) VALUES ('%s', :client_id || '-' || :r || '-' || clock_timestamp()) ON CONFLICT DO NOTHING;
INSERT INTO bench_ref.inbox (id, envelope) VALUES (gen_random_uuid(), '%s');
COMMIT;
`, accountID, row)
		ref, err := env.pgbenchRun(ctx, script, opts.Clients, opts.Duration)
		if err != nil {
			return res, err
		}
		res.ReferenceTPS, res.refCPU, res.refTx = ref.tps, ref.cpu, ref.tx
		_ = env.Exec(ctx, "DROP SCHEMA bench_ref CASCADE")
	}
	return res, nil
}

// slackWebhooks creates a Slack account in a tenant of its own and returns
// a maker of signed event_callback webhooks to it: unique event ids, text
// of textBytes, 50 channels and 200 users in turn.
func slackWebhooks(ctx context.Context, env *Env, textBytes int) (newRequest func() *loadRequest, accountID uuid.UUID, err error) {
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 2, RuntimeRole: "mio_runtime"})
	if err != nil {
		return nil, uuid.Nil, err
	}
	defer pool.Close()
	box, _ := secretbox.New(env.MasterKey)
	svc := admin.New(pool, box, env.BaseURL)
	tenant, _, err := svc.TenantCreate(ctx, tenantName("bench"))
	if err != nil {
		return nil, uuid.Nil, err
	}
	const signingSecret = "bench-signing-secret"
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "slack", WebhookSecret: signingSecret, ExternalID: "TBENCH"})
	if err != nil {
		return nil, uuid.Nil, err
	}
	url := env.BaseURL + "/webhooks/slack/" + acct.ID.String()
	text := loremText(textBytes)
	var seq atomic.Int64
	return func() *loadRequest {
		n := seq.Add(1)
		ts := time.Now()
		body := fmt.Appendf(nil, `{"token":"t","team_id":"TBENCH","api_app_id":"ABENCH","type":"event_callback","event_id":"Ev%d","event_time":%d,"event":{"type":"message","channel":"C%d","channel_type":"channel","user":"U%d","text":%q,"ts":"%d.%06d","client_msg_id":"%d"}}`,
			n, ts.Unix(), n%50, n%200, text, ts.Unix(), n%1000000, n)
		sts := strconv.FormatInt(ts.Unix(), 10)
		return &loadRequest{method: http.MethodPost, url: url, body: body, header: [][2]string{
			{"Content-Type", "application/json"},
			{"X-Slack-Request-Timestamp", sts},
			{"X-Slack-Signature", slack.Signature(signingSecret, sts, body)},
		}}
	}, acct.ID, nil
}

// loremText is n bytes of filler text.
func loremText(n int) string { return strings.Repeat("lorem ipsum ", n/12+1)[:n] }

// ingestTarget is MIO's ingest target for a client count: at least
// pgbench's rate at 32 clients, 1.5 times it at 128 (group commit should
// win more the more requests wait together); other counts print 1.0.
func ingestTarget(clients int) float64 {
	if clients >= 128 {
		return 1.5
	}
	return 1.0
}

// Print writes the result as a small report.
func (r *IngestResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench ingest — %d clients (%s load generator), signed Slack event_callback, unique event_id\n", r.Clients, r.Loader)
	fmt.Fprintf(w, "  accepted/s        %10.0f   (%d accepted, %d failed)\n", r.PerSec, r.Accepted, r.Failed)
	fmt.Fprintf(w, "  latency p50       %10s\n", r.P50.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  latency p99       %10s\n", r.P99.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  latency max       %10s\n", r.Max.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  server RSS        %10.1f MB (peak %.1f MB)\n", float64(r.RSS)/1e6, float64(r.PeakRSS)/1e6)
	printCPU(w, "webhook", r.cpu, r.Accepted+r.Failed)
	printGroup(w, r.group0, r.group1)
	if r.ReferenceTPS > 0 {
		fmt.Fprintf(w, "reference: pgbench, same database, %d clients, one commit per request: %s\n", r.Clients, r.ReferenceShape)
		fmt.Fprintf(w, "  pgbench tx/s      %10.0f\n", r.ReferenceTPS)
		printReferenceCPU(w, r.refCPU, r.refTx)
		fmt.Fprintf(w, "  ratio mio/pgbench %10.2f   (target >= %.2f; p99 <= 50ms; RSS <= 150 MB)\n", r.PerSec/r.ReferenceTPS, ingestTarget(r.Clients))
	}
}
