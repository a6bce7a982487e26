package workers_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/workers"
)

// outBundle is a database with one account per channel, every adapter
// pointed at one fake platform server, and dispatcher processes (River
// clients with their own pools) working the outbox.
type outBundle struct {
	env      *dbtest.Env
	box      *secretbox.Box
	tenant   uuid.UUID
	fake     *fakeProviders
	accounts map[string]uuid.UUID
	clients  []*river.Client[pgx.Tx]
	disps    []*workers.Dispatcher
	owner    *pgxpool.Pool
}

type outOpts struct {
	script    func(channel, conversation string, n int) action
	processes int // dispatcher processes; default 1, 0 with noStart
	noStart   bool
	dispatch  workers.DispatchConfig
	sweep     bool // each process also runs the outbox sweeper (every 100ms)
	// tracerProvider traces the dispatcher and its River client.
	tracerProvider trace.TracerProvider
}

var outChannels = []string{"slack", "telegram", "discord", "zoho_cliq", "whatsapp", "webhook"}

// allChannels are every channel's accounts the bundle holds: the stream
// tests cover Teams and Google Chat as well.
var allChannels = append(slices.Clone(outChannels), "teams", "google_chat")

func newOutBundle(t *testing.T, o outOpts) *outBundle {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	tenant, _, err := svc.TenantCreate(ctx, "outbound")
	require.NoError(t, err)
	b := &outBundle{env: env, box: box, tenant: tenant.ID, accounts: map[string]uuid.UUID{}, owner: env.OwnerPool(t)}
	b.fake = newFakeProviders(t, o.script)
	reg := b.registry()
	whsec := "whsec_" + base64.StdEncoding.EncodeToString(key)
	for _, ct := range allChannels {
		p := admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: ct, WebhookSecret: "secret-" + ct}
		switch ct {
		case "slack":
			p.Credentials = json.RawMessage(`{"bot_token":"xoxb-test"}`)
		case "telegram":
			p.Credentials = json.RawMessage(`{"bot_token":"123456:test-token"}`)
		case "discord":
			p.Credentials = json.RawMessage(`{"bot_token":"discord-token"}`)
		case "zoho_cliq":
			p.Credentials = json.RawMessage(`{"access_token":"zoho-token"}`)
		case "whatsapp":
			p.Credentials = json.RawMessage(`{"access_token":"wa-token"}`)
			p.Settings = json.RawMessage(`{"phone_number_id":"5550001"}`)
		case "webhook":
			p.WebhookSecret = whsec
			p.Settings = json.RawMessage(fmt.Sprintf(`{"endpoint_url":%q}`, b.fake.srv.URL+"/webhook/in"))
		case "teams":
			p.Registry = reg // its token endpoint is plain http
			p.Credentials = json.RawMessage(`{"app_id":"00000000-0000-0000-0000-00000000a11d","client_secret":"teams-secret"}`)
			p.Settings = json.RawMessage(fmt.Sprintf(`{"token_url":%q}`, b.fake.srv.URL+"/token"))
		case "google_chat":
			p.Registry = reg
			p.Credentials = googleKey(t, b.fake.srv.URL+"/token")
			p.Settings = json.RawMessage(fmt.Sprintf(`{"token_url":%q,"project_number":"1234"}`, b.fake.srv.URL+"/token"))
		}
		a, err := svc.AccountCreate(ctx, p)
		require.NoError(t, err, ct)
		b.accounts[ct] = a.ID
	}
	// Per-channel buckets would slow the matrix down: tests of rate limits
	// set their own. The webhook channel has none: its rows take the fast
	// claim, with extra rows per job.
	_, err = b.owner.Exec(ctx, `UPDATE mio.accounts SET rate_limit_per_sec = 10000, rate_limit_burst = 10000 WHERE channel_type <> 'webhook'`)
	require.NoError(t, err)
	if o.noStart {
		b.clients = append(b.clients, b.newClient(t, o, false))
		return b
	}
	n := max(o.processes, 1)
	for range n {
		b.clients = append(b.clients, b.newClient(t, o, true))
	}
	return b
}

// newClient builds one dispatcher process: its own pool, registry,
// dispatcher and River client.
func (b *outBundle) newClient(t *testing.T, o outOpts, start bool) *river.Client[pgx.Tx] {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, b.env.OwnerURL, db.PoolOptions{MaxConns: 10, RuntimeRole: dbtest.RuntimeRole})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	cfg := o.dispatch
	cfg.Accounts = accounts.NewResolver(pool, accounts.ResolverConfig{Box: b.box, Registry: b.registry()})
	if cfg.SendTimeout == 0 {
		cfg.SendTimeout = 300 * time.Millisecond
	}
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase, cfg.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
	}
	cfg.TracerProvider = o.tracerProvider
	set := workers.NewSet()
	b.disps = append(b.disps, set.AddDispatch(pool, cfg))
	client, err := workers.NewClient(pool, set, workers.Config{Work: start, TracerProvider: o.tracerProvider})
	require.NoError(t, err)
	if start {
		require.NoError(t, client.Start(ctx))
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = client.Stop(sctx)
		})
	}
	if o.sweep {
		runSweeper(t, workers.NewOutboxSweeper(pool, client, workers.OutboxSweepConfig{Interval: 100 * time.Millisecond}))
	}
	return client
}

// runSweeper runs s until the test ends, as a worker process does.
func runSweeper(t *testing.T, s *workers.OutboxSweeper) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// registry is every adapter pointed at the fake (its token endpoint is
// plain http).
func (b *outBundle) registry() *channels.Registry {
	return builtin.Registry(builtin.Options{APIBase: b.fake.apiBase(), APIBasePolicy: channels.APIBasePolicy{AllowHTTP: true}})
}

// googleRSA is the key of every bundle's Google Chat account.
var googleRSA = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

// googleKey is a Google service-account key file whose token_uri is uri.
func googleKey(t testing.TB, uri string) json.RawMessage {
	t.Helper()
	key, err := googleRSA()
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	b, err := json.Marshal(map[string]string{"type": "service_account", "project_id": "mio-test", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "mio@mio-test.iam.gserviceaccount.com", "client_id": "1234", "token_uri": uri})
	require.NoError(t, err)
	return b
}

// send enqueues one message as POST /v1/outbound does.
func (b *outBundle) send(t testing.TB, channel, conversation, text string, editOf *uuid.UUID) uuid.UUID {
	t.Helper()
	ids := b.sendMany(t, channel, []string{conversation}, []string{text}, editOf)
	return ids[0]
}

func (b *outBundle) sendMany(t testing.TB, channel string, conversations, texts []string, editOf *uuid.UUID) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	rows := make([]db.OutboxNew, len(texts))
	for i := range texts {
		rows[i] = db.OutboxNew{ID: uuid.New(), AccountID: b.accounts[channel], ChannelType: channel,
			ConversationID: conversations[i%len(conversations)], IdempotencyKey: uuid.NewString(),
			RequestSHA256: make([]byte, 32), Text: texts[i], EditOf: editOf}
	}
	err := db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		ins, err := outbox.New(b.env.Pool, b.clients[0]).EnqueueTx(ctx, tx, b.tenant, rows)
		if err == nil && len(ins) != len(rows) {
			err = fmt.Errorf("inserted %d of %d", len(ins), len(rows))
		}
		return err
	})
	require.NoError(t, err)
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

func (b *outBundle) get(t testing.TB, id uuid.UUID) (*db.Outbound, []db.OutboxEvent) {
	t.Helper()
	ctx := context.Background()
	var o *db.Outbound
	var ev []db.OutboxEvent
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		var err error
		if o, err = db.OutboxGet(ctx, tx, b.tenant, id); err != nil {
			return err
		}
		ev, err = db.OutboxEventList(ctx, tx, b.tenant, id)
		return err
	}))
	return o, ev
}

// waitTerminal waits until every message is handed off or dead.
func (b *outBundle) waitTerminal(t testing.TB, ids []uuid.UUID, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		var n int
		err := db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM mio.outbox WHERE id = ANY($1) AND handoff_state IN ('handed_off','dead')`, ids).Scan(&n)
		})
		return err == nil && n == len(ids)
	}, within, 20*time.Millisecond)
}

// timeline renders events as "event:state@attempt".
func timeline(ev []db.OutboxEvent) []string {
	out := make([]string, len(ev))
	for i, e := range ev {
		out[i] = fmt.Sprintf("%s:%s@%d", e.Event, e.State, e.AttemptNo)
	}
	return out
}

// Conversations of the channel matrix: the scenario is in the id (numeric,
// so that every platform accepts it as a chat or channel id).
const (
	convOK       = "900000000000000001"
	convLimited  = "900000000000000002"
	conv5xx      = "900000000000000003"
	convTimeout  = "900000000000000004"
	convPerm     = "900000000000000005"
	convForever  = "900000000000000006"
	matrixMaxTry = 3
)

func matrixScript(_, conversation string, n int) action {
	switch conversation {
	case convLimited:
		if n == 1 {
			return actRateLimit
		}
	case conv5xx:
		if n == 1 {
			return actServerErr
		}
	case convTimeout:
		if n == 1 {
			return actTimeout
		}
	case convPerm:
		return actPermanent
	case convForever:
		return actServerErr
	}
	return actOK
}

// TestDispatchChannelMatrix sends, on each of the six channels against a
// fake of its API: a success, a 429 with Retry-After (not an attempt), a
// 5xx then success, a timeout then success, a permanent 4xx (dead at
// once) and 5xx forever (dead after max_attempts), and checks states,
// attempts, last_error and the event timeline of each.
func TestDispatchChannelMatrix(t *testing.T) {
	t.Parallel()
	b := newOutBundle(t, outOpts{script: matrixScript})
	_, err := b.owner.Exec(context.Background(), `UPDATE mio.accounts SET max_attempts = $1`, matrixMaxTry)
	require.NoError(t, err)

	type want struct {
		state    db.HandoffState
		attempts int
		timeline []string
		lastErr  bool
	}
	ok := []string{"queued:queued@1", "sending:sending@1", "handed_off:handed_off@1", "accepted:accepted@1"}
	retried := []string{"queued:queued@1", "sending:sending@1", "retry:queued@2", "sending:sending@2",
		"handed_off:handed_off@2", "accepted:accepted@2"}
	scenarios := []struct {
		name string
		conv string
		want want
	}{
		{"success", convOK, want{db.HandoffHandedOff, 1, ok, false}},
		{"429 then success", convLimited, want{db.HandoffHandedOff, 1, []string{"queued:queued@1", "sending:sending@1",
			"rate_limited:sending@1", "resumed:sending@1", "handed_off:handed_off@1", "accepted:accepted@1"}, false}},
		{"5xx then success", conv5xx, want{db.HandoffHandedOff, 2, retried, true}},
		{"timeout then success", convTimeout, want{db.HandoffHandedOff, 2, retried, true}},
		{"permanent 4xx", convPerm, want{db.HandoffDead, 1, []string{"queued:queued@1", "sending:sending@1", "dead:dead@1"}, true}},
		{"5xx forever", convForever, want{db.HandoffDead, matrixMaxTry, []string{"queued:queued@1", "sending:sending@1",
			"retry:queued@2", "sending:sending@2", "retry:queued@3", "sending:sending@3", "dead:dead@3"}, true}},
	}
	ids := map[string]uuid.UUID{}
	var all []uuid.UUID
	for _, ch := range outChannels {
		for _, sc := range scenarios {
			id := b.send(t, ch, sc.conv, ch+" "+sc.name, nil)
			ids[ch+"/"+sc.name] = id
			all = append(all, id)
		}
	}
	b.waitTerminal(t, all, 30*time.Second)
	for _, ch := range outChannels {
		for _, sc := range scenarios {
			t.Run(ch+"/"+sc.name, func(t *testing.T) {
				o, ev := b.get(t, ids[ch+"/"+sc.name])
				require.Equal(t, sc.want.state, o.HandoffState, "last_error %q", o.LastError)
				require.Equal(t, sc.want.attempts, o.Attempts)
				require.Equal(t, sc.want.timeline, timeline(ev))
				if sc.want.lastErr {
					require.NotEmpty(t, o.LastError)
				}
				if o.HandoffState == db.HandoffHandedOff {
					require.NotEmpty(t, o.ProviderMessageID)
					require.Equal(t, db.ProviderAccepted, o.ProviderState)
				}
			})
		}
	}
	// Exactly one successful call per delivered message; the webhook
	// channel's webhook-id of attempt 2 is the one of attempt 1.
	got := map[string]int{}
	for _, c := range b.fake.Calls() {
		got[c.Text]++
		if c.Channel == "webhook" {
			require.Equal(t, "mio-"+ids["webhook/"+strings.TrimPrefix(c.Text, "webhook ")].String(), c.Key, c.Text)
		}
	}
	for _, ch := range outChannels {
		for _, sc := range scenarios {
			n := 0
			if sc.want.state == db.HandoffHandedOff {
				n = 1
			}
			require.Equal(t, n, got[ch+" "+sc.name], "%s %s", ch, sc.name)
		}
	}
}

// TestDispatchEventRecordsTheKeySent: the handed_off event's
// idempotency_key is the key the platform received on the successful call
// (the webhook channel's webhook-id, Discord's nonce), and absent on
// channels that take no key. Every first call fails, so the key is that
// of attempt 2.
func TestDispatchEventRecordsTheKeySent(t *testing.T) {
	t.Parallel()
	b := newOutBundle(t, outOpts{script: func(_, _ string, n int) action {
		if n == 1 {
			return actServerErr
		}
		return actOK
	}})
	ids := map[string]uuid.UUID{}
	var all []uuid.UUID
	for i, ch := range outChannels {
		ids[ch] = b.send(t, ch, fmt.Sprintf("50000000000000000%d", i), "key "+ch, nil)
		all = append(all, ids[ch])
	}
	b.waitTerminal(t, all, 30*time.Second)
	sent := map[string]string{}
	for _, c := range b.fake.Calls() {
		sent[c.Channel] = c.Key
	}
	require.Equal(t, "mio-"+ids["webhook"].String(), sent["webhook"])
	require.NotEmpty(t, sent["discord"])
	for _, ch := range outChannels {
		t.Run(ch, func(t *testing.T) {
			o, ev := b.get(t, ids[ch])
			require.Equal(t, db.HandoffHandedOff, o.HandoffState, "last_error %q", o.LastError)
			var detail map[string]any
			for _, e := range ev {
				if e.Event == "handed_off" {
					require.NoError(t, json.Unmarshal(e.Detail, &detail))
				}
			}
			require.NotNil(t, detail, "no handed_off event")
			key, recorded := detail["idempotency_key"]
			if sent[ch] == "" {
				require.False(t, recorded, "%s takes no key, the event records %v", ch, key)
				return
			}
			require.Equal(t, sent[ch], key)
		})
	}
}

// TestDispatchTwoProcesses: two dispatcher processes (two River clients,
// two pools) on one database, 1,000 sends: every message reaches the
// platform exactly once, each conversation in order.
func TestDispatchTwoProcesses(t *testing.T) {
	t.Parallel()
	// A generous send timeout: this test is about exactly-once claiming
	// across processes, not about timeouts. With the suite's 300 ms, a
	// loaded CI box (race detector, parallel packages) timed a send out
	// after the fake had received it, and the retry (next attempt, new
	// key, as designed) arrived as a second call.
	b := newOutBundle(t, outOpts{processes: 2, dispatch: workers.DispatchConfig{SendTimeout: 10 * time.Second}})
	const n, convs = 1000, 50
	texts := make([]string, n)
	conversations := make([]string, convs)
	for i := range conversations {
		conversations[i] = fmt.Sprintf("7000000000%04d", i)
	}
	for i := range texts {
		texts[i] = fmt.Sprintf("m%04d", i)
	}
	ids := b.sendMany(t, "webhook", conversations, texts, nil)
	b.waitTerminal(t, ids, 60*time.Second)
	seen := map[string]int{}
	keys := map[string][]string{}
	byConv := map[string][]string{}
	for _, c := range b.fake.Calls() {
		seen[c.Text]++
		keys[c.Text] = append(keys[c.Text], c.Key)
		byConv[c.Conversation] = append(byConv[c.Conversation], c.Text)
	}
	for _, tx := range texts {
		require.Equal(t, 1, seen[tx], "message %s (keys %v)", tx, keys[tx])
	}
	for conv, got := range byConv {
		require.True(t, slices.IsSorted(got), "conversation %s out of order: %v", conv, got)
	}
	for _, id := range ids[:20] {
		o, _ := b.get(t, id)
		require.Equal(t, db.HandoffHandedOff, o.HandoffState)
	}
}

// TestDispatchOrderUnderRetries: a conversation whose sends fail now and
// then still reaches the platform in accepted order.
func TestDispatchOrderUnderRetries(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	b := newOutBundle(t, outOpts{processes: 2, script: func(_, _ string, _ int) action {
		mu.Lock()
		defer mu.Unlock()
		calls++
		switch calls % 4 {
		case 1:
			return actServerErr
		case 2:
			return actTimeout
		}
		return actOK
	}})
	_, err := b.owner.Exec(context.Background(), `UPDATE mio.accounts SET max_attempts = 50`)
	require.NoError(t, err)
	texts := make([]string, 30)
	for i := range texts {
		texts[i] = fmt.Sprintf("o%03d", i)
	}
	// Zoho Cliq: no per-chat bucket (Telegram's 1 msg/s per chat would pace this test).
	ids := b.sendMany(t, "zoho_cliq", []string{"800000000000000001"}, texts, nil)
	b.waitTerminal(t, ids, 60*time.Second)
	var got []string
	for _, c := range b.fake.Calls() {
		got = append(got, c.Text)
	}
	require.Equal(t, texts, got)
}

// TestDispatchEditAfterOriginal: the "thinking…" then edit flow. An edit
// issued right after its original never reaches the platform first, and
// edits the original's provider message (or, on channels that cannot
// edit, arrives as a new message after it).
func TestDispatchEditAfterOriginal(t *testing.T) {
	t.Parallel()
	// The first call of every conversation fails, so the original is
	// still being retried when its edit is claimable.
	b := newOutBundle(t, outOpts{processes: 2, script: func(_, _ string, n int) action {
		if n == 1 {
			return actServerErr
		}
		return actOK
	}})
	for i, ch := range outChannels {
		t.Run(ch, func(t *testing.T) {
			conv := fmt.Sprintf("60000000000000000%d", i)
			orig := b.send(t, ch, conv, "thinking…", nil)
			edit := b.send(t, ch, conv, "the answer", &orig)
			b.waitTerminal(t, []uuid.UUID{orig, edit}, 30*time.Second)
			o, _ := b.get(t, orig)
			e, _ := b.get(t, edit)
			require.Equal(t, db.HandoffHandedOff, o.HandoffState)
			require.Equal(t, db.HandoffHandedOff, e.HandoffState)
			var seq []call
			for _, c := range b.fake.Calls() {
				if c.Channel == ch && c.Conversation == conv {
					seq = append(seq, c)
				}
			}
			require.Len(t, seq, 2)
			require.Equal(t, "thinking…", seq[0].Text)
			require.Equal(t, "the answer", seq[1].Text)
			if ch == "whatsapp" || ch == "zoho_cliq" {
				require.Equal(t, "send", seq[1].Op, "no Editor: the edit goes as a new message")
			} else {
				require.Equal(t, "edit", seq[1].Op)
				require.True(t, strings.HasPrefix(o.ProviderMessageID, seq[1].EditID) || o.ProviderMessageID == seq[1].EditID,
					"edit names %q, original is %q", seq[1].EditID, o.ProviderMessageID)
			}
		})
	}
}

// TestDispatchGivesUpWaitingForASendSlot: a claimed row that finds every
// provider call slot busy for longer than the slot wait is not sent by
// its job: nothing is recorded, and it is resumed after its lease with
// the same attempt and key, and sent once. It never stays claimed and
// unsent past its lease, where a resume would send it beside the job
// still waiting to.
func TestDispatchGivesUpWaitingForASendSlot(t *testing.T) {
	t.Parallel()
	// One slot. The first call the fake gets hangs until the send times
	// out (2 s), holding the slot past the other row's slot wait (lease
	// 8 s − send timeout 2 s − 5 s = 1 s).
	var calls atomic.Int32
	b := newOutBundle(t, outOpts{
		script: func(string, string, int) action {
			if calls.Add(1) == 1 {
				return actTimeout
			}
			return actOK
		},
		dispatch: workers.DispatchConfig{MaxSends: 1, SendTimeout: 2 * time.Second, Lease: 8 * time.Second},
	})
	// One job for both (a group): its claim takes both, and both wait for
	// the one slot.
	ids := b.sendMany(t, "webhook", []string{"slot-a", "slot-b"}, []string{"a", "b"}, nil)
	b.waitTerminal(t, ids, 60*time.Second)

	var gaveUp, timedOut []string
	for _, id := range ids {
		o, ev := b.get(t, id)
		require.Equal(t, db.HandoffHandedOff, o.HandoffState, "%v", timeline(ev))
		if slices.ContainsFunc(ev, func(e db.OutboxEvent) bool { return e.Event == "resumed" }) {
			gaveUp = append(gaveUp, o.ConversationID)
			require.Equal(t, 1, o.AttemptNo, "a row that gave up its slot keeps its attempt: %v", timeline(ev))
		} else {
			timedOut = append(timedOut, o.ConversationID)
			require.Equal(t, 2, o.AttemptNo, "the row whose call hung is retried: %v", timeline(ev))
		}
	}
	require.Len(t, gaveUp, 1, "one row should have given up waiting for the slot (timed out: %v)", timedOut)
	b.fake.mu.Lock()
	defer b.fake.mu.Unlock()
	require.Equal(t, 1, b.fake.count["webhook/"+gaveUp[0]], "the row that gave up was sent once, when resumed")
}
