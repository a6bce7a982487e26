package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/slack"
	"github.com/miohq/mio/channels/telegram"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/workers"
)

// chaosDuration is how long the chaos suite keeps the load and the kills
// going; the settling and the checks come after it. The long run (see
// docs/chaos.md): go test ./cmd/mio/ -run TestChaos -chaos.duration=30m -timeout 60m
var chaosDuration = flag.Duration("chaos.duration", 40*time.Second, "how long TestChaos* run their load and kills")

// TestChaos: on one PostgreSQL of its own, two `mio serve --role api`, two
// `--role worker` and one `--role bridge` process (publishing to an
// in-process NATS JetStream) under mixed load — signed webhooks on the
// Standard Webhooks, Slack and Telegram channels, two consumers pulling
// (one replying with ack, one acking), sends to the three platforms whose
// fakes answer 429, 5xx or slowly at random — while a process is killed
// with SIGKILL and restarted every few seconds and PostgreSQL is
// crash-restarted once. Then: every webhook answered 200 is stored
// exactly once and was delivered to each consumer; no acked delivery came
// back; every accepted send is handed off (and reached its platform) or
// dead with its last error; a send that reached a platform twice carried
// the same idempotency key (webhook-id); nothing stays in sending; every
// stored message reached the NATS stream exactly once.
func TestChaos(t *testing.T) {
	runChaos(t, false)
}

// TestChaosThroughPgBouncer is TestChaos with the processes' pools going
// through PgBouncer in transaction pooling mode (their LISTEN connection
// direct), the supported way to run behind it: `make test-pgbouncer`. No
// bridge: it holds session-level advisory locks, which need a session.
func TestChaosThroughPgBouncer(t *testing.T) {
	if os.Getenv("MIO_TEST_PGBOUNCER") == "" {
		t.Skip("MIO_TEST_PGBOUNCER not set (make test-pgbouncer)")
	}
	runChaos(t, true)
}

// chaosInbound is one platform message the load sends, as often as it
// takes: the same id each time, as a platform redelivers.
type chaosInbound struct {
	channel, text string
	post          func(c *http.Client, base string) (int, error)
}

// chaosRun is the state of one run.
type chaosRun struct {
	t        *testing.T
	cluster  *chaosCluster
	fakes    *chaosPlatforms
	accounts map[string]uuid.UUID
	token    string
	whsec    string
	apis     []*chaosProc
	procs    []*chaosProc
	nats     *chaosNATS // nil: no bridge in this run

	mu        sync.Mutex
	inbound   []*chaosInbound
	answered  map[string]bool // text -> answered 200 at least once
	refused   map[string]bool // text -> a send answered otherwise (or failed)
	delivered map[string]map[string]int
	acked     map[string]map[string]bool
	cameBack  []string
	settledAs map[string]string    // consumer/text -> the delivery settled
	settledAt map[string]time.Time // consumer/text -> when its settle was answered OK
	sends     map[uuid.UUID]string // accepted send id -> idempotency key
	errs      []string

	webhooksSent, resent atomic.Int64
	replyLost            atomic.Int64
}

const (
	// chaosConversations per channel: Slack and Telegram allow one message
	// a second per channel or chat (MIO's default rate limits), so the
	// load spreads over enough of them to stay below.
	chaosConversations = 100

	chaosSlackSecret    = "chaos-slack-signing-secret"
	chaosTelegramSecret = "chaos_telegram_secret"
)

func runChaos(t *testing.T, pooled bool) {
	if testing.Short() {
		t.Skip("chaos suite: not in -short")
	}
	ctx := context.Background()
	begin := time.Now()
	r := &chaosRun{t: t, cluster: startChaosCluster(t, pooled), fakes: newChaosPlatforms(t), accounts: map[string]uuid.UUID{},
		answered: map[string]bool{}, settledAs: map[string]string{}, settledAt: map[string]time.Time{}, refused: map[string]bool{}, sends: map[uuid.UUID]string{},
		delivered: map[string]map[string]int{"agent-a": {}, "agent-b": {}},
		acked:     map[string]map[string]bool{"agent-a": {}, "agent-b": {}}}
	key := r.setup(ctx)

	env := []string{"MIO_DATABASE_URL=" + r.cluster.poolURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
		"MIO_ENV=dev", "MIO_LOG_LEVEL=warn", "MIO_DB_MAX_CONNS=8", "MIO_BLOB_URL=file://" + t.TempDir()}
	if pooled {
		env = append(env, "MIO_DATABASE_LISTEN_URL="+r.cluster.ownerURL)
	}
	if !pooled {
		// Before the processes' ports are picked: NATS listens on a port
		// of the kernel's choosing, which could be one picked (and
		// released) for a process — a CI run's api2 never became ready,
		// its readiness probe answered by NATS's INFO line.
		r.nats = startChaosNATS(t)
	}
	for i := range 2 {
		api := newChaosProc(t, "api"+strconv.Itoa(i+1), "api", env)
		r.apis = append(r.apis, api)
		r.procs = append(r.procs, api, newChaosProc(t, "worker"+strconv.Itoa(i+1), "worker", env))
	}
	if !pooled {
		// The bridge holds its per-tenant advisory locks on a session:
		// not through a transaction pooler, so only in the direct run.
		r.procs = append(r.procs, newChaosProc(t, "bridge", "bridge", append(env, "MIO_NATS_URL="+r.nats.url)))
	}
	for _, p := range r.procs {
		require.NoError(t, p.start(60*time.Second))
	}
	t.Cleanup(func() {
		for _, p := range r.procs {
			p.kill()
		}
	})
	for _, name := range []string{"agent-a", "agent-b"} {
		_, err := r.client(0).PutConsumer(ctx, name, client.ConsumerConfig{DeliverPolicy: "all", AckWait: client.Duration(5 * time.Second)})
		require.NoError(t, err)
	}

	// The load and the chaos, for chaosDuration.
	var (
		stopLoad, stopConsumers atomic.Bool
		load, consumers         sync.WaitGroup
		kills                   atomic.Int64
		pgDown                  time.Duration
	)
	for range 4 {
		load.Add(1)
		go func() { defer load.Done(); r.webhookLoad(&stopLoad) }()
	}
	load.Add(1)
	go func() { defer load.Done(); r.sendLoad(ctx, &stopLoad) }()
	for _, name := range []string{"agent-a", "agent-b"} {
		for i := range 2 {
			consumers.Add(1)
			go func() { defer consumers.Done(); r.consume(ctx, name, i, &stopConsumers) }()
		}
	}
	end := time.Now().Add(*chaosDuration)
	crashAt := time.Now().Add(*chaosDuration / 2)
	for time.Now().Before(end) {
		time.Sleep(2*time.Second + time.Duration(mrand.Int64N(int64(2*time.Second))))
		if !crashAt.IsZero() && time.Now().After(crashAt) {
			t.Logf("%s crash PostgreSQL", time.Now().Format("15:04:05"))
			d, err := r.cluster.crash(ctx)
			require.NoError(t, err)
			pgDown, crashAt = d, time.Time{}
			continue
		}
		p := r.procs[mrand.IntN(len(r.procs))]
		t.Logf("%s kill %s", time.Now().Format("15:04:05"), p.name)
		p.kill()
		kills.Add(1)
		require.NoError(t, p.start(90*time.Second), "restart %s", p.name)
	}
	stopLoad.Store(true)
	load.Wait()
	r.fakes.calm()
	loadEnd := time.Now()

	// Settle: the platforms redeliver what was not answered 200, the
	// consumers drain, the workers finish every send.
	t.Logf("%s load ended", time.Now().Format("15:04:05"))
	r.redeliverRefused()
	t.Logf("%s refused webhooks redelivered", time.Now().Format("15:04:05"))
	owner, err := db.Open(ctx, r.cluster.ownerURL, db.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	defer owner.Close()
	r.waitSettled(ctx, 2*time.Minute)
	stopConsumers.Store(true)
	consumers.Wait()
	t.Logf("%s consumers drained", time.Now().Format("15:04:05"))
	// A worker killed mid-send leaves the dispatch jobs it was running
	// "running" in River and their rows queued or sending: River's rescuer
	// takes those jobs back and their retries resume the rows, and the
	// sweeper gives a job to rows whose jobs run longer than the dispatch
	// job timeout plus a minute, at its next sweep. The bound waited for
	// is the sweeper's, so a slow rescue shows as the slow settling
	// printed below, not as a failure of the invariants.
	stuckBound := workers.NewDispatcher(nil, workers.DispatchConfig{}).JobTimeout() + time.Minute + 5*time.Second
	active, overdue := r.waitOutboxSettled(ctx, owner, stuckBound+30*time.Second)
	settled := time.Since(loadEnd)

	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		t.Error(e)
	}
	if active != 0 {
		r.dumpOutbox(ctx, owner)
	}
	require.Zero(t, active, "outbound rows still queued or sending %s after the load", settled)
	require.Zero(t, overdue, "rows stayed in sending %s past their lease", chaosOverdue)
	c := r.check(ctx, owner)
	if r.nats != nil {
		published := r.checkBridge(ctx, owner, time.Minute)
		t.Logf("  NATS bridge: %d stored inbound messages in the stream, each exactly once (by Nats-Msg-Id)", published)
	}
	faults := r.fakes.faultCounts()
	t.Logf("chaos (%s, pooled=%v): load %s, settled in %s, total %s", strings.Join(r.procNames(), "+"), pooled,
		*chaosDuration, settled.Round(time.Second), time.Since(begin).Round(time.Second))
	t.Logf("  kills (SIGKILL + restart): %d; PostgreSQL crash-restarted once, down %s", kills.Load(), pgDown.Round(time.Millisecond))
	t.Logf("  webhooks: %d distinct, %d posts, %d answered 200, %d refused/interrupted then redelivered, %d duplicate redeliveries; stored %d (each once)",
		len(r.inbound), r.webhooksSent.Load(), len(r.answered), len(r.refused), r.resent.Load(), c.stored)
	for _, name := range []string{"agent-a", "agent-b"} {
		n, again := 0, 0
		for _, k := range r.delivered[name] {
			n += k
			again += k - 1
		}
		t.Logf("  consumer %s: %d deliveries (%d redeliveries), %d settled (ack or reply-with-ack)", name, n, again, len(r.acked[name]))
	}
	t.Logf("  acked deliveries that came back: %d; replies lost with their lease: %d", len(r.cameBack), r.replyLost.Load())
	t.Logf("  sends accepted: %d (handed off %d, dead %d); platform faults %v; platform successes %d, of which duplicates %d (webhook %d, same webhook-id)",
		len(r.sends), c.handedOff, c.dead, faults, c.platformOK, c.duplicates, c.webhookDuplicates)
	for _, p := range r.procs {
		if len(p.failed) > 0 {
			t.Logf("  %s: %d starts failed, the last: %s", p.name, len(p.failed), p.failed[len(p.failed)-1])
		}
	}
	require.Empty(t, r.cameBack, "acked deliveries came back")
}

// setup creates the tenant, an account per channel pointed at the fakes,
// and a token; it returns the master key.
func (r *chaosRun) setup(ctx context.Context) []byte {
	t := r.t
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	pool, err := db.Open(ctx, r.cluster.ownerURL, db.PoolOptions{MaxConns: 2, RuntimeRole: dbtest.RuntimeRole})
	require.NoError(t, err)
	defer pool.Close()
	svc := admin.New(pool, box, "http://mio.test")
	tenant, _, err := svc.TenantCreate(ctx, "chaos")
	require.NoError(t, err)
	r.whsec = "whsec_" + base64.StdEncoding.EncodeToString(key)
	base := r.fakes.srv.URL
	for _, a := range []struct{ channel, settings, creds, secret string }{
		{"webhook", `{"endpoint_url":"` + base + `/webhook"}`, ``, r.whsec},
		{"slack", `{"api_base_url":"` + base + `/slack"}`, `{"bot_token":"xoxb-chaos"}`, chaosSlackSecret},
		{"telegram", `{"mode":"webhook","api_base_url":"` + base + `/telegram"}`, `{"bot_token":"123456:chaos"}`, chaosTelegramSecret},
	} {
		p := admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: a.channel, Settings: json.RawMessage(a.settings), WebhookSecret: a.secret}
		if a.creds != "" {
			p.Credentials = json.RawMessage(a.creds)
		}
		info, err := svc.AccountCreate(ctx, p)
		require.NoError(t, err, a.channel)
		r.accounts[a.channel] = info.ID
	}
	r.token, _, err = svc.TokenCreate(ctx, tenant.ID, "chaos", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	require.NoError(t, err)
	return key
}

func (r *chaosRun) procNames() []string {
	var out []string
	for _, p := range r.procs {
		out = append(out, fmt.Sprintf("%s×%d", p.name, p.starts))
	}
	return out
}

// client talks to api process i (mod 2), retrying network errors while
// it is down.
func (r *chaosRun) client(i int) *client.Client {
	return client.New(r.apis[i%len(r.apis)].public, r.token,
		client.WithRetry(client.Retry{Attempts: 50, Base: 20 * time.Millisecond, Max: 200 * time.Millisecond}))
}

func chaosHTTP(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

// newInbound builds message n of a channel, signed at every post.
func (r *chaosRun) newInbound(n int) *chaosInbound {
	channels := []string{"webhook", "slack", "telegram"}
	in := &chaosInbound{channel: channels[n%len(channels)], text: fmt.Sprintf("in-%d", n)}
	url := "/webhooks/" + in.channel + "/" + r.accounts[in.channel].String()
	var body []byte
	switch in.channel {
	case "webhook":
		body = fmt.Appendf(nil, `{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":"conv-%d"},"sender":{"id":"u1"},"text":%q}}`,
			time.Now().UTC().Format(time.RFC3339), n%chaosConversations, in.text)
	case "slack":
		body = fmt.Appendf(nil, `{"token":"x","team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":"EvChaos%d","event_time":%d,`+
			`"event":{"type":"message","channel":"C%d","channel_type":"channel","user":"U1","text":%q,"ts":"%d.000100"}}`,
			n, 1700000000+n, n%chaosConversations, in.text, 1700000000+n)
	case "telegram":
		body = fmt.Appendf(nil, `{"update_id":%d,"message":{"message_id":%d,"date":%d,"chat":{"id":%d,"type":"private"},"from":{"id":%d,"is_bot":false,"first_name":"Ada"},"text":%q}}`,
			n, n, time.Now().Unix(), 4000+n%chaosConversations, 4000+n%chaosConversations, in.text)
	}
	in.post = func(c *http.Client, base string) (int, error) {
		req, _ := http.NewRequest(http.MethodPost, base+url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		now := time.Now()
		ts := strconv.FormatInt(now.Unix(), 10)
		switch in.channel {
		case "webhook":
			id := "msg_chaos_" + strconv.Itoa(n)
			sig, err := webhook.Sign(r.whsec, id, now, body)
			if err != nil {
				return 0, err
			}
			req.Header.Set("webhook-id", id)
			req.Header.Set("webhook-timestamp", ts)
			req.Header.Set("webhook-signature", sig)
		case "slack":
			req.Header.Set("X-Slack-Request-Timestamp", ts)
			req.Header.Set("X-Slack-Signature", slack.Signature(chaosSlackSecret, ts, body))
		case "telegram":
			req.Header.Set(telegram.SecretTokenHeader, chaosTelegramSecret)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	return in
}

// webhookLoad posts new messages to a random api process and, now and
// then, one already answered 200 again (a platform's duplicate delivery).
func (r *chaosRun) webhookLoad(stop *atomic.Bool) {
	c := chaosHTTP(5 * time.Second)
	for i := 0; !stop.Load(); i++ {
		var in *chaosInbound
		r.mu.Lock()
		if len(r.inbound) > 0 && mrand.IntN(20) == 0 {
			in = r.inbound[mrand.IntN(len(r.inbound))]
			r.resent.Add(1)
		} else {
			in = r.newInbound(len(r.inbound))
			r.inbound = append(r.inbound, in)
		}
		r.mu.Unlock()
		status, err := in.post(c, r.apis[mrand.IntN(len(r.apis))].public)
		r.webhooksSent.Add(1)
		r.mu.Lock()
		if err == nil && status == http.StatusOK {
			r.answered[in.text] = true
		} else {
			r.refused[in.text] = true
		}
		r.mu.Unlock()
		time.Sleep(60 * time.Millisecond)
	}
}

// sendLoad queues sends to the three platforms; every tenth command is
// sent a second time under its key (a client retrying), which must answer
// with the first id.
func (r *chaosRun) sendLoad(ctx context.Context, stop *atomic.Bool) {
	conversation := map[string]string{"webhook": "conv-out-", "slack": "COUT", "telegram": "5"}
	channels := []string{"webhook", "slack", "telegram"}
	for n := 0; !stop.Load(); n++ {
		ch := channels[n%len(channels)]
		cmd := envelope.SendCommand{IdempotencyKey: "send-" + strconv.Itoa(n), AccountID: r.accounts[ch],
			ConversationID: conversation[ch] + strconv.Itoa(n%chaosConversations), Text: "out-" + strconv.Itoa(n)}
		for range 1 + min(1, n%10/9) {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			sent, err := r.client(mrand.IntN(2)).Send(cctx, cmd)
			cancel()
			if err != nil {
				continue // refused or interrupted: the client would retry later
			}
			r.mu.Lock()
			if key, seen := r.sends[sent.ID]; seen && key != cmd.IdempotencyKey {
				r.errs = append(r.errs, fmt.Sprintf("send %s answered with the id of %s", cmd.IdempotencyKey, key))
			}
			r.sends[sent.ID] = cmd.IdempotencyKey
			r.mu.Unlock()
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// consume pulls for consumer name: agent-a replies with ack to every
// other message and acks the rest, agent-b acks. It records what it was
// delivered, what it settled, and any settled message that came back.
func (r *chaosRun) consume(ctx context.Context, name string, i int, stop *atomic.Bool) {
	for !stop.Load() {
		api := i + mrand.IntN(2)
		c := r.client(api)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		began := time.Now()
		ds, err := c.Pull(pctx, name, 10, time.Second)
		cancel()
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for _, d := range ds {
			text := d.Message.Text
			r.mu.Lock()
			r.delivered[name][text]++
			// Came back: handed out by a pull that began after the message's
			// settle was answered. The deliveries of one pull are settled one
			// by one, seconds apart under chaos, so another worker may settle
			// a redelivery of a message (its lease expired, or the pull that
			// handed it out was lost in the PostgreSQL crash: pulls commit
			// asynchronously) before this one gets to it: that is not a
			// delivery after the settle.
			if at, ok := r.settledAt[name+"/"+text]; ok && at.Before(began) {
				r.cameBack = append(r.cameBack, fmt.Sprintf("%s: %s (delivery %s, count %d, seq %d, pull began %s; settled earlier: %s)",
					name, text, d.DeliveryID, d.DeliveryCount, d.Seq, began.Format("15:04:05.000"), r.settledAs[name+"/"+text]))
			}
			r.mu.Unlock()
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			settled := false
			if n, _ := strconv.Atoi(strings.TrimPrefix(text, "in-")); name == "agent-a" && n%2 == 0 {
				cmd := envelope.SendCommand{IdempotencyKey: "reply:" + d.DeliveryID.String(), Text: "re: " + text}
				sent, err := c.Reply(sctx, name, d.DeliveryID, cmd)
				switch {
				case err == nil:
					settled = true
					r.mu.Lock()
					r.sends[sent.ID] = cmd.IdempotencyKey
					r.mu.Unlock()
				case client.IsLeaseLost(err):
					r.replyLost.Add(1)
				}
			} else {
				res, err := c.Ack(sctx, name, d.DeliveryID)
				settled = err == nil && len(res) == 1 && res[0].OK
			}
			cancel()
			if settled {
				r.mu.Lock()
				now := time.Now()
				r.settledAs[name+"/"+text] = fmt.Sprintf("delivery %s count %d seq %d, pull began %s, settled at %s via %s", d.DeliveryID,
					d.DeliveryCount, d.Seq, began.Format("15:04:05.000"), now.Format("15:04:05.000"), r.apis[api%len(r.apis)].name)
				if _, ok := r.settledAt[name+"/"+text]; !ok {
					r.settledAt[name+"/"+text] = now
				}
				r.acked[name][text] = true
				r.mu.Unlock()
			}
		}
	}
}

// redeliverRefused posts every message not answered 200 again until it
// is, as its platform would.
func (r *chaosRun) redeliverRefused() {
	c := chaosHTTP(5 * time.Second)
	r.mu.Lock()
	var todo []*chaosInbound
	for _, in := range r.inbound {
		if !r.answered[in.text] {
			todo = append(todo, in)
		}
	}
	r.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for _, in := range todo {
		for {
			status, err := in.post(c, r.apis[mrand.IntN(len(r.apis))].public)
			if err == nil && status == http.StatusOK {
				r.mu.Lock()
				r.answered[in.text] = true
				r.mu.Unlock()
				break
			}
			if time.Now().After(deadline) {
				r.t.Errorf("webhook %s not accepted after the chaos: %d %v", in.text, status, err)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// waitSettled waits until each consumer was delivered every message
// answered 200 and, by its own stats, has nothing pending, leased or
// dead. (The client's view of its acks is not enough: an ack whose answer
// was lost and that the client retried answers "not outstanding".)
func (r *chaosRun) waitSettled(ctx context.Context, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		missing := 0
		r.mu.Lock()
		for text := range r.answered {
			for _, d := range r.delivered {
				if d[text] == 0 {
					missing++
				}
			}
		}
		r.mu.Unlock()
		open := map[string]client.ConsumerStats{}
		for _, name := range []string{"agent-a", "agent-b"} {
			info, err := r.client(0).GetConsumer(ctx, name)
			if err != nil || info.Stats.Pending+info.Stats.AckPending+info.Stats.Dead > 0 {
				if info != nil {
					open[name] = info.Stats
				} else {
					open[name] = client.ConsumerStats{}
				}
			}
		}
		if missing == 0 && len(open) == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("%d (message, consumer) pairs never delivered; consumers not drained: %+v", missing, open)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// chaosOverdue bounds how long a row may stay in sending past its lease:
// the outbox sweeper gives it a job within its grace (10 s) and interval
// (5 s). Every worker process runs the sweeper, so a killed process delays
// the next pass by no more than an interval of the surviving one; the
// rest is slack for a loaded machine and PostgreSQL's crash restart.
const chaosOverdue = 30 * time.Second

// waitOutboxSettled waits until no outbound row is queued or sending and
// returns how many still are, and the most rows seen in sending with a
// lease ended over chaosOverdue earlier.
func (r *chaosRun) waitOutboxSettled(ctx context.Context, owner *pgxpool.Pool, limit time.Duration) (active, overdue int) {
	deadline := time.Now().Add(limit)
	lastLog := time.Now()
	for {
		var n int
		if err := owner.QueryRow(ctx, `SELECT count(*) FROM mio.outbox
			WHERE handoff_state = 'sending' AND lease_until < now() - make_interval(secs => $1)`, chaosOverdue.Seconds()).Scan(&n); err == nil {
			if n > overdue {
				r.dumpOverdue(ctx, owner)
			}
			overdue = max(overdue, n)
		}
		err := owner.QueryRow(ctx, `SELECT count(*) FROM mio.outbox WHERE handoff_state IN ('queued', 'sending')`).Scan(&active)
		if err == nil && active == 0 || time.Now().After(deadline) {
			return active, overdue
		}
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			var s string
			_ = owner.QueryRow(ctx, `SELECT coalesce(string_agg(format('%s job=%s age=%s by=%s: %s', st, js, age, who, n), '; '), '') FROM (
				SELECT o.handoff_state st, coalesce(j.state::text, 'none') js, coalesce((extract(epoch FROM now() - j.attempted_at)::int / 10 * 10)::text, '-') age,
				       coalesce(j.attempted_by[array_length(j.attempted_by, 1)], '-') who, count(*) n
				FROM mio.outbox o LEFT JOIN river.river_job j ON j.id = o.job_id WHERE o.handoff_state IN ('queued', 'sending') GROUP BY 1, 2, 3, 4) y`).Scan(&s)
			r.t.Logf("%s outbox active %d: %s", time.Now().Format("15:04:05"), active, s)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// dumpOverdue logs the sending rows whose lease ended over chaosOverdue
// ago, with their River job, the process holding the outbox sweeper's
// lock, the River leader and the rows of mio.worker_heartbeats
// (written only by workers of the previous release while pods roll): what
// a failure of the lease bound needs to be explained.
func (r *chaosRun) dumpOverdue(ctx context.Context, owner *pgxpool.Pool) {
	var s string
	// With what the job may be waiting for: the account's rate limit, the
	// lane's earliest active row before this one (a lane waits for it),
	// and the rows queued with it for the same token buckets.
	_ = owner.QueryRow(ctx, `SELECT coalesce(string_agg(format('row %s %s/%s lease_until=%s attempt=%s job=%s state=%s scheduled=%s attempted=%s by=%s errors=%s'
			|| E'\n    account rate limit %s/s burst %s; lane before it: %s'
			|| E'\n    active rows: account %s, conversation %s; token buckets: account %s, conversation %s',
			o.id, o.channel_type, o.conversation_id, o.lease_until::time, o.attempt_no, o.job_id, j.state,
			j.scheduled_at::time, j.attempted_at::time, j.attempted_by,
			(SELECT string_agg(e ->> 'error', ' | ') FROM jsonb_array_elements(to_jsonb(j.errors)) e),
			coalesce(a.rate_limit_per_sec::text, 'default'), coalesce(a.rate_limit_burst::text, 'default'),
			coalesce((SELECT format('%s %s attempt=%s next_attempt_at=%s lease_until=%s', p.id, p.handoff_state, p.attempt_no,
			                        p.next_attempt_at::time, p.lease_until::time)
			          FROM mio.outbox p WHERE p.tenant_id = o.tenant_id AND p.account_id = o.account_id
			            AND p.conversation_id = o.conversation_id AND p.active AND p.seq < o.seq
			          ORDER BY p.seq LIMIT 1), 'none'),
			(SELECT count(*) FROM mio.outbox q WHERE q.tenant_id = o.tenant_id AND q.account_id = o.account_id AND q.active),
			(SELECT count(*) FROM mio.outbox q WHERE q.tenant_id = o.tenant_id AND q.account_id = o.account_id
			   AND q.conversation_id = o.conversation_id AND q.active),
			coalesce((SELECT format('%s tokens at %s', round(b.tokens::numeric, 2), b.updated_at::time) FROM mio.rate_buckets b
			          WHERE b.tenant_id = o.tenant_id AND b.bucket_key = 'a:' || o.account_id), 'none'),
			coalesce((SELECT format('%s tokens at %s', round(b.tokens::numeric, 2), b.updated_at::time) FROM mio.rate_buckets b
			          WHERE b.tenant_id = o.tenant_id AND b.bucket_key = 'c:' || o.account_id || ':' || o.conversation_id), 'none')),
			E'\n'), '')
		FROM mio.outbox o LEFT JOIN river.river_job j ON j.id = o.job_id
		LEFT JOIN mio.accounts a ON a.tenant_id = o.tenant_id AND a.id = o.account_id
		WHERE o.handoff_state = 'sending' AND o.lease_until < now() - make_interval(secs => $1)`, chaosOverdue.Seconds()).Scan(&s)
	var sweeping, leader, beats string
	_ = owner.QueryRow(ctx, `SELECT coalesce(string_agg(format('pid %s %s since %s', l.pid, a.application_name, a.xact_start::time), '; '), 'none')
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND (l.classid::bigint << 32 | l.objid::bigint) = $1`, db.OutboxSweepLockKey).Scan(&sweeping)
	_ = owner.QueryRow(ctx, `SELECT coalesce(string_agg(format('%s elected=%s expires=%s', leader_id, elected_at::time, expires_at::time), '; '), 'none') FROM river.river_leader`).Scan(&leader)
	_ = owner.QueryRow(ctx, `SELECT coalesce(string_agg(format('%s since=%s expires=%s', client_id, alive_since::time, expires_at::time), '; '), 'none') FROM mio.worker_heartbeats`).Scan(&beats)
	r.t.Logf("%s sending rows %s past their lease (now %s):\n%s\n  sweeping: %s\n  leader: %s\n  heartbeats: %s", time.Now().Format("15:04:05"), chaosOverdue,
		time.Now().Format("15:04:05.000"), s, sweeping, leader, beats)
}

type chaosCounts struct {
	stored, handedOff, dead, platformOK, duplicates, webhookDuplicates int
}

// check asserts the invariants (r.mu held) and returns the counts.
func (r *chaosRun) check(ctx context.Context, owner *pgxpool.Pool) chaosCounts {
	t := r.t
	var c chaosCounts
	// Stored exactly once, delivered to each consumer.
	stored := map[string]int{}
	rows, err := owner.Query(ctx, `SELECT envelope->>'text' FROM mio.inbox`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		stored[s]++
		c.stored++
	}
	require.NoError(t, rows.Err())
	for text, n := range stored {
		require.Equal(t, 1, n, "message %s stored %d times", text, n)
	}
	for text := range r.answered {
		require.Equal(t, 1, stored[text], "webhook %s answered 200 but stored %d times", text, stored[text])
		for name, d := range r.delivered {
			require.NotZero(t, d[text], "%s answered 200 but never delivered to %s", text, name)
		}
	}

	// Every accepted send handed off or dead with its last error; one
	// row per idempotency key; what was handed off reached its platform.
	platform := map[string][]chaosCall{}
	for _, call := range r.fakes.successes() {
		platform[call.Text] = append(platform[call.Text], call)
		c.platformOK++
	}
	type row struct {
		state, key, text, lastError string
	}
	outbox := map[uuid.UUID]row{}
	rows, err = owner.Query(ctx, `SELECT id, handoff_state, idempotency_key, text, coalesce(last_error, '') FROM mio.outbox`)
	require.NoError(t, err)
	byText := map[string]int{}
	for rows.Next() {
		var id uuid.UUID
		var o row
		require.NoError(t, rows.Scan(&id, &o.state, &o.key, &o.text, &o.lastError))
		outbox[id] = o
		byText[o.text]++
	}
	require.NoError(t, rows.Err())
	for text, n := range byText {
		require.Equal(t, 1, n, "%d outbound rows carry %q: a send or reply stored twice", n, text)
	}
	for id, key := range r.sends {
		o, ok := outbox[id]
		require.True(t, ok, "accepted send %s (%s) is missing", id, key)
		require.Equal(t, key, o.key)
		switch o.state {
		case "handed_off":
			c.handedOff++
			require.NotEmpty(t, platform[o.text], "send %s (%s) handed off but never reached its platform", id, key)
		case "dead":
			c.dead++
			require.NotEmpty(t, o.lastError, "send %s (%s) dead without its last error", id, key)
		default:
			t.Fatalf("send %s (%s) is %s after the chaos settled", id, key, o.state)
		}
	}
	// A send that reached its platform twice carried the same key.
	texts := make([]string, 0, len(platform))
	for text := range platform {
		texts = append(texts, text)
	}
	sort.Strings(texts)
	for _, text := range texts {
		calls := platform[text]
		if len(calls) < 2 {
			continue
		}
		c.duplicates += len(calls) - 1
		if calls[0].Channel == "webhook" {
			c.webhookDuplicates += len(calls) - 1
			for _, call := range calls[1:] {
				require.Equal(t, calls[0].Key, call.Key, "%q reached the webhook endpoint under two webhook-ids", text)
			}
		}
	}
	return c
}

// dumpOutbox logs the rows still active and the processes' output, to
// see why they are.
func (r *chaosRun) dumpOutbox(ctx context.Context, owner *pgxpool.Pool) {
	rows, err := owner.Query(ctx, `SELECT handoff_state, attempts, attempt_no, coalesce(last_error, ''), lease_until IS NOT NULL AND lease_until < now(),
		next_attempt_at < now(), job_id IS NOT NULL, count(*)
		FROM mio.outbox WHERE handoff_state IN ('queued', 'sending') GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 8 DESC LIMIT 20`)
	if err != nil {
		r.t.Logf("dump outbox: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var state, lastError string
		var attempts, attemptNo, n int
		var leaseEnded, due, job bool
		if err := rows.Scan(&state, &attempts, &attemptNo, &lastError, &leaseEnded, &due, &job, &n); err == nil {
			r.t.Logf("  active: %d x %s attempts=%d attempt_no=%d lease_ended=%v due=%v job=%v last_error=%q", n, state, attempts, attemptNo, leaseEnded, due, job, lastError)
		}
	}
	var jobInfo string
	_ = owner.QueryRow(ctx, `SELECT coalesce(string_agg(x, '; '), '') FROM (
		SELECT format('%s attempted %ss ago by %s attempt %s: %s', st, age, who, att, count(*)) AS x FROM (
			SELECT coalesce(j.state::text, 'gone') AS st, coalesce((extract(epoch FROM now() - j.attempted_at)::int / 10 * 10)::text, '-') AS age,
			       coalesce(j.attempted_by[array_length(j.attempted_by, 1)], '-') AS who, coalesce(j.attempt, 0) AS att
			FROM mio.outbox o LEFT JOIN river.river_job j ON j.id = o.job_id
			WHERE o.handoff_state IN ('queued', 'sending')) a
		GROUP BY st, age, who, att ORDER BY count(*) DESC LIMIT 10) y`).Scan(&jobInfo)
	r.t.Logf("  jobs of the active rows: %s", jobInfo)
	var jobs string
	_ = owner.QueryRow(ctx, `SELECT coalesce(string_agg(state || ':' || kind || '=' || n, ', '), '') FROM (SELECT state, kind, count(*) n FROM river.river_job GROUP BY 1, 2) j`).Scan(&jobs)
	r.t.Logf("  river jobs: %s", jobs)
	for _, p := range r.procs {
		out := p.out.String()
		if len(out) > 3000 {
			out = out[len(out)-3000:]
		}
		r.t.Logf("  %s output: %s", p.name, out)
	}
}
