package workers_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/workers"
)

// fakeDiscordHistory serves GET /channels/{id}/messages?after=&limit= of
// one channel holding messages first..last, newest first like Discord,
// answering 429 when told to.
type fakeDiscordHistory struct {
	srv         *httptest.Server
	channel     string
	first, last int
	mu          sync.Mutex
	calls       int
	limited     func(call int) (retryAfter float64, limited bool)
}

func newFakeDiscordHistory(t *testing.T, channel string, first, last int) *fakeDiscordHistory {
	f := &fakeDiscordHistory{channel: channel, first: first, last: last}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls++
		call, limited := f.calls, f.limited
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bot history-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if limited != nil {
			if ra, ok := limited(call); ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = fmt.Fprintf(w, `{"message":"You are being rate limited.","retry_after":%g,"global":false}`, ra)
				return
			}
		}
		if r.URL.Path != "/channels/"+f.channel+"/messages" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":10003,"message":"Unknown Channel"}`))
			return
		}
		after, _ := strconv.Atoi(r.URL.Query().Get("after"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var page []map[string]any
		for id := max(after+1, f.first); id <= f.last && len(page) < limit; id++ {
			page = append(page, map[string]any{"id": strconv.Itoa(id), "channel_id": f.channel, "content": "m" + strconv.Itoa(id),
				"author": map[string]any{"id": "7", "username": "u"}, "attachments": []any{}})
		}
		slices.Reverse(page)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

type reconcileBundle struct {
	env      *dbtest.Env
	tenant   uuid.UUID
	account  uuid.UUID
	ingester *ingest.Ingester
	metrics  *metrics.Reconcile
	worker   *workers.ReconcileWorker
	resolver *accounts.Resolver
}

func newReconcileBundle(t *testing.T, apiBase string) *reconcileBundle {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return newReconcileBundleFor(t, &accounts.Spec{ChannelType: envelope.ChannelDiscord, DisplayName: "d",
		WebhookSecret: hex.EncodeToString(pub),
		Settings:      json.RawMessage(fmt.Sprintf(`{"api_base_url": %q, "gateway": false}`, apiBase)),
		Credentials:   json.RawMessage(`{"bot_token": "history-token"}`)})
}

// newReconcileBundleFor is a bundle whose account is spec (tenant and id
// filled in).
func newReconcileBundleFor(t *testing.T, spec *accounts.Spec) *reconcileBundle {
	t.Helper()
	ctx := context.Background()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	registry := builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	b := &reconcileBundle{env: dbtest.New(t), account: uuid.New(), metrics: metrics.NewReconcile(nil)}
	tn, err := db.TenantInsert(ctx, b.env.Pool, uuid.Nil, "t")
	require.NoError(t, err)
	b.tenant = tn.ID
	spec.TenantID, spec.ID = b.tenant, b.account
	require.NoError(t, spec.Validate(registry))
	row, err := spec.Seal(box)
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.AccountInsert(ctx, tx, row)
		return err
	}))
	b.ingester = ingest.New(b.env.Pool, ingest.Config{})
	b.ingester.Start()
	t.Cleanup(b.ingester.Stop)
	set := workers.NewSet()
	b.resolver = accounts.NewResolver(b.env.Pool, accounts.ResolverConfig{Box: box, Registry: registry})
	b.worker = set.AddReconcile(b.env.Pool, b.resolver, registry, workers.ReconcileConfig{Metrics: b.metrics})
	b.worker.Ingester = b.ingester
	return b
}

// live stores messages as the Gateway would: inbox rows and the cursor.
func (b *reconcileBundle) live(t *testing.T, channel string, ids ...int) {
	t.Helper()
	acct := &accounts.Account{ID: b.account, TenantID: b.tenant, ChannelType: envelope.ChannelDiscord}
	for _, id := range ids {
		msg := envelope.Message{ChannelType: envelope.ChannelDiscord, SourceMessageID: strconv.Itoa(id),
			Conversation: envelope.Conversation{ID: channel, Type: envelope.ConversationChannel}, Text: "live"}
		req := ingest.Prepare(acct, &channels.Parsed{Messages: []envelope.Message{msg}}, nil, msg.SentAt)
		_, err := b.ingester.IngestWith(context.Background(), req, func(ctx context.Context, tx pgx.Tx, _ *ingest.Result) error {
			return db.SourceCursorAdvance(ctx, tx, b.tenant, b.account,
				db.SourceCursor{ConversationID: channel, ConversationType: envelope.ConversationChannel, LastSourceID: strconv.Itoa(id)})
		})
		require.NoError(t, err)
	}
}

func (b *reconcileBundle) run(t *testing.T) {
	t.Helper()
	require.NoError(t, b.worker.Work(context.Background(), &river.Job[workers.ReconcileArgs]{}))
}

// stored returns how many rows each source_message_id has.
func (b *reconcileBundle) stored(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT source_message_id FROM mio.inbox WHERE account_id = $1`, b.account)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, id := range ids {
			out[id]++
		}
		return err
	}))
	return out
}

func (b *reconcileBundle) requireExactlyOnce(t *testing.T, first, last int) {
	t.Helper()
	got := b.stored(t)
	require.Len(t, got, last-first+1)
	for id := first; id <= last; id++ {
		require.Equal(t, 1, got[strconv.Itoa(id)], "message %d", id)
	}
}

func (b *reconcileBundle) cursor(t *testing.T) string {
	t.Helper()
	var c []db.SourceCursor
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		var err error
		c, err = db.SourceCursorList(context.Background(), tx, b.tenant, b.account, db.SourceCursor{}.ActiveAt, 10)
		return err
	}))
	require.Len(t, c, 1)
	return c[0].LastSourceID
}

func TestReconcileFillsGapOf500(t *testing.T) {
	t.Parallel()
	fake := newFakeDiscordHistory(t, "500", 1001, 1510)
	b := newReconcileBundle(t, fake.srv.URL)
	// The live intake stored 1001..1010, then missed 500 messages.
	b.live(t, "500", 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010)

	b.run(t)
	b.requireExactlyOnce(t, 1001, 1510)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelDiscord)))
	require.Equal(t, "1510", b.cursor(t))

	var env envelope.Message
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT envelope FROM mio.inbox WHERE account_id = $1 AND source_message_id = '1200'`,
			b.account).Scan(&env)
	}))
	require.Equal(t, envelope.Conversation{ID: "500", Type: envelope.ConversationChannel}, env.Conversation)
	require.Equal(t, "m1200", env.Text)

	// Idempotent: a second run reads after the cursor and stores nothing;
	// even from an old cursor, dedup stores nothing twice.
	b.run(t)
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE mio.source_cursors SET last_source_id = '1000'`)
		return err
	}))
	b.run(t)
	b.requireExactlyOnce(t, 1001, 1510)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelDiscord)))
}

func TestReconcileRespects429(t *testing.T) {
	t.Parallel()
	fake := newFakeDiscordHistory(t, "600", 1, 510)
	b := newReconcileBundle(t, fake.srv.URL)
	b.live(t, "600", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)

	// Short 429s are waited out within the run.
	fake.mu.Lock()
	fake.limited = func(call int) (float64, bool) { return 0.05, call%2 == 1 }
	fake.mu.Unlock()
	b.run(t)
	b.requireExactlyOnce(t, 1, 510)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelDiscord)))
	require.Positive(t, testutil.ToFloat64(b.metrics.Calls.WithLabelValues(envelope.ChannelDiscord, "rate_limited")))
}

func TestReconcileLong429EndsRunThenResumes(t *testing.T) {
	t.Parallel()
	fake := newFakeDiscordHistory(t, "700", 1, 510)
	b := newReconcileBundle(t, fake.srv.URL)
	b.live(t, "700", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)

	// After two pages the platform asks for a minute: the run ends
	// without error, keeping what it stored and its cursor.
	fake.mu.Lock()
	fake.limited = func(call int) (float64, bool) { return 60, call > 2 }
	fake.mu.Unlock()
	b.run(t)
	require.Equal(t, "210", b.cursor(t))
	b.requireExactlyOnce(t, 1, 210)

	fake.mu.Lock()
	fake.limited = nil
	fake.mu.Unlock()
	b.run(t)
	b.requireExactlyOnce(t, 1, 510)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelDiscord)))
}

// TestReconcileHistoryBucketFromInfo: an account's history bucket is its
// channel's Info.HistoryRateLimit (Discord 1 call/s, burst 5), and 1
// call/s where the channel names none (Slack).
func TestReconcileHistoryBucketFromInfo(t *testing.T) {
	t.Parallel()
	reg := builtin.Registry(builtin.Options{})
	id := uuid.New()
	for _, c := range []struct {
		slug        string
		rate, burst float64
	}{{envelope.ChannelDiscord, 1, 5}, {envelope.ChannelSlack, 1, 1}} {
		ch, _ := reg.Get(c.slug)
		key, rate, burst := workers.HistoryBucket(ch, id)
		require.Equal(t, "h:"+id.String(), key, c.slug)
		require.Equal(t, c.rate, rate, c.slug)
		require.Equal(t, c.burst, burst, c.slug)
	}
}
