package telegram_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/channels/telegram"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/sources"
)

type bundle struct {
	env     *dbtest.Env
	box     *secretbox.Box
	fake    *channelstest.FakeTelegram
	tenant  uuid.UUID
	account uuid.UUID
	tg      *telegram.Channel
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	b := &bundle{env: dbtest.New(t), box: box, fake: channelstest.NewFakeTelegram(t),
		tg: telegram.New(telegram.Options{APIBasePolicy: channels.APIBasePolicy{AllowHTTP: true}})}
	svc := admin.New(b.env.Pool, box, "http://mio.test")
	tn, _, err := svc.TenantCreate(ctx, "polling")
	require.NoError(t, err)
	b.tenant = tn.ID
	settings, _ := json.Marshal(map[string]any{"mode": "polling", "delete_webhook": true, "api_base_url": b.fake.URL})
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "telegram",
		Settings: settings, Credentials: json.RawMessage(`{"bot_token":"123456:poll-token"}`),
		Registry: channels.NewRegistry(b.tg)})
	require.NoError(t, err, "a polling bot needs no webhook secret")
	b.account = acct.ID
	return b
}

// runner starts a polling process (its own pool, resolver and ingester)
// until the test ends or stop is called.
func (b *bundle) runner(t *testing.T, cfg telegram.SourceConfig, holder ...uuid.UUID) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool, err := db.Open(ctx, b.env.OwnerURL, db.PoolOptions{MaxConns: 5, RuntimeRole: dbtest.RuntimeRole})
	require.NoError(t, err)
	in := ingest.New(pool, ingest.Config{})
	in.Start()
	resolver := accounts.NewResolver(pool, accounts.ResolverConfig{Box: b.box, Registry: channels.NewRegistry(b.tg)})
	deps := channels.SourceDeps{Store: sources.NewStore(pool, resolver, in, nil, envelope.ChannelTelegram)}
	if len(holder) > 0 {
		deps.Holder = holder[0]
	}
	if cfg.PollTimeout == 0 {
		cfg.PollTimeout = time.Second
	}
	if cfg.Lease == 0 {
		cfg.Lease = 3 * time.Second
	}
	cfg.Rescan, cfg.ErrorPause = 200*time.Millisecond, 50*time.Millisecond
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = telegram.NewRunner(b.tg, cfg, deps).Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			in.Stop()
			pool.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

func (b *bundle) addMessages(n int, from int) {
	for i := range n {
		b.fake.AddUpdate(fmt.Sprintf(`"message":{"message_id":%d,"date":1717171717,"chat":{"id":42,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"Ada"},"text":"m%d"}`, from+i, from+i))
	}
}

// stored returns how many inbox rows each source id has.
func (b *bundle) stored(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT source_message_id FROM mio.inbox`)
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

func (b *bundle) waitStored(t *testing.T, n int) map[string]int {
	t.Helper()
	var got map[string]int
	require.Eventually(t, func() bool { got = b.stored(t); return len(got) >= n }, 30*time.Second, 20*time.Millisecond)
	return got
}

func requireOnce(t *testing.T, got map[string]int, n int) {
	t.Helper()
	require.Len(t, got, n, "no update lost")
	for id, c := range got {
		require.Equal(t, 1, c, "update %s stored once", id)
	}
}

// TestPollCrashBetweenFetchAndCommit: the first process fetches a batch
// and dies before committing it (a failure in the commit's place, then
// the process gone); the next process, once the lease ran out, fetches
// from the stored offset: every update is stored, none twice.
func TestPollCrashBetweenFetchAndCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addMessages(5, 1)
	fetched := make(chan struct{})
	var crashed atomic.Bool
	stopA := b.runner(t, telegram.SourceConfig{BeforeCommit: func(ctx context.Context, _ uuid.UUID, batch *telegram.Batch) error {
		if crashed.CompareAndSwap(false, true) {
			require.Len(t, batch.Parsed.Messages, 5)
			close(fetched)
			<-ctx.Done() // never commits: the process is gone
			return errors.New("crash")
		}
		return nil
	}})
	<-fetched
	go stopA()
	require.Empty(t, b.stored(t), "nothing committed before the crash")

	b.runner(t, telegram.SourceConfig{})
	requireOnce(t, b.waitStored(t, 5), 5)

	b.addMessages(3, 6)
	requireOnce(t, b.waitStored(t, 8), 8)
	_, conflicts, deletes := b.fake.PollStats()
	require.Zero(t, conflicts)
	require.GreaterOrEqual(t, deletes, 1, "delete_webhook: the webhook is removed when polling starts")
}

// TestPollLostLeaseNotCommitted: a process that fetched a batch but lost
// its lease to another one before committing stores nothing, while the
// new holder stores every update once.
func TestPollLostLeaseNotCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addMessages(4, 1)
	var once atomic.Bool
	released := make(chan struct{})
	b.runner(t, telegram.SourceConfig{Lease: time.Second, BeforeCommit: func(ctx context.Context, _ uuid.UUID, _ *telegram.Batch) error {
		if once.CompareAndSwap(false, true) {
			select { // stalls past its lease until the other process took over and stored the batch
			case <-released:
			case <-ctx.Done():
			}
		}
		return nil
	}})
	// The second process takes the bot once the stalled one's lease runs out.
	holderB := uuid.New()
	b.runner(t, telegram.SourceConfig{}, holderB)
	requireOnce(t, b.waitStored(t, 4), 4)
	close(released) // the stalled process now tries to commit its stale batch
	b.addMessages(2, 5)
	requireOnce(t, b.waitStored(t, 6), 6)
	var holder uuid.UUID
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT holder FROM mio.telegram_pollers`).Scan(&holder)
	}))
	require.Equal(t, holderB, holder, "the stalled process's commit did not take the lease back")
}

// TestTwoPollersOnePolls: two processes for one bot: only one getUpdates
// at a time ever reaches Telegram (no 409), and every update is stored
// once.
func TestTwoPollersOnePolls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.runner(t, telegram.SourceConfig{})
	b.runner(t, telegram.SourceConfig{})
	for i := range 5 {
		b.addMessages(4, 1+4*i)
		b.waitStored(t, 4*(i+1))
	}
	requireOnce(t, b.stored(t), 20)
	maxConcurrent, conflicts, _ := b.fake.PollStats()
	require.Equal(t, 1, maxConcurrent)
	require.Zero(t, conflicts)
}
