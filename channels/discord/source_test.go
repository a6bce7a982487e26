package discord_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/discord"
	"github.com/miohq/mio/channels/discord/discordtest"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/sources"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// testBundle is a database with one tenant and one Discord account whose
// gateway_url points at a fake Gateway.
type testBundle struct {
	env      *dbtest.Env
	resolver *accounts.Resolver
	ingester *ingest.Ingester
	fake     *discordtest.Gateway
	tenant   uuid.UUID
	account  uuid.UUID
	lost     atomic.Int32 // CatchUp calls
	metrics  *metrics.Gateway
}

func setup(t *testing.T, token string) *testBundle {
	t.Helper()
	ctx := context.Background()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	registry := builtin.Registry(builtin.Options{})
	b := &testBundle{env: dbtest.New(t), fake: discordtest.NewGateway(t, "good-token"), metrics: metrics.NewGateway(nil)}
	b.resolver = accounts.NewResolver(b.env.Pool, accounts.ResolverConfig{Box: box, Registry: registry})
	b.ingester = ingest.New(b.env.Pool, ingest.Config{})
	b.ingester.Start()
	t.Cleanup(b.ingester.Stop)
	tn, err := db.TenantInsert(ctx, b.env.Pool, uuid.Nil, "t")
	require.NoError(t, err)
	b.tenant, b.account = tn.ID, uuid.New()
	// Gateway only: no application public key (no interactions endpoint).
	spec := &accounts.Spec{TenantID: b.tenant, ID: b.account, ChannelType: envelope.ChannelDiscord, DisplayName: "d",
		Settings:    json.RawMessage(fmt.Sprintf(`{"gateway_url": %q}`, b.fake.URL())),
		Credentials: json.RawMessage(fmt.Sprintf(`{"bot_token": %q}`, token))}
	require.NoError(t, spec.Validate(registry))
	row, err := spec.Seal(box)
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.AccountInsert(ctx, tx, row)
		return err
	}))
	return b
}

// manager starts a Manager on the bundle's database; the returned stop
// ends it (abandon: without releasing its leases, like a killed process).
func (b *testBundle) manager(t *testing.T, tune ...func(*discord.SourceConfig)) (*discord.Manager, func(abandon bool)) {
	t.Helper()
	cfg := discord.SourceConfig{
		Gateway:          discord.GatewayOptions{ReconnectMin: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond, MaxPayload: 64 << 10},
		IdentifyInterval: 10 * time.Millisecond, LeaseTTL: time.Second, Scan: 50 * time.Millisecond,
		Metrics: b.metrics,
	}
	for _, f := range tune {
		f(&cfg)
	}
	m := discord.NewManager(cfg, channels.SourceDeps{
		Store:   sources.NewStore(b.env.Pool, b.resolver, b.ingester, nil, envelope.ChannelDiscord),
		Logger:  slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		CatchUp: func(_, _ uuid.UUID) { b.lost.Add(1) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	stopped := false
	stop := func(abandon bool) {
		if stopped {
			return
		}
		stopped = true
		m.SetAbandon(abandon)
		cancel()
		<-done
	}
	t.Cleanup(func() { stop(false) })
	return m, stop
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitFake waits for a fake Gateway condition.
func (b *testBundle) waitFake(t *testing.T, what string, cond func(f discordtest.Stats) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.True(t, b.fake.Wait(ctx, cond), "fake gateway: %s", what)
}

// stored returns the source_message_ids in the inbox, oldest first.
func (b *testBundle) stored(t *testing.T) []string {
	t.Helper()
	var ids []string
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(),
			`SELECT source_message_id FROM mio.inbox WHERE account_id = $1 ORDER BY seq`, b.account)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}))
	return ids
}

// waitStored waits until n messages are stored.
func (b *testBundle) waitStored(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	require.Eventually(t, func() bool { ids = b.stored(t); return len(ids) >= n }, 20*time.Second, 20*time.Millisecond,
		"want %d stored messages", n)
	return ids
}

func (b *testBundle) session(t *testing.T) (sessionID string, seq int64, holder *uuid.UUID, errText string) {
	t.Helper()
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(),
			`SELECT session_id, seq, holder, error FROM mio.gateway_sessions WHERE account_id = $1`, b.account).
			Scan(&sessionID, &seq, &holder, &errText)
	}))
	return
}

func identified(n int) func(f discordtest.Stats) bool {
	return func(f discordtest.Stats) bool { return f.Readies >= n && f.Connected }
}

func TestMessagesStoredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	b.manager(t)
	b.waitFake(t, "identify", identified(1))

	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("1001", "500", "77", "1", "in a guild channel"))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("1002", "600", "77", "1", "in a thread"))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("1003", "700", "", "2", "a DM"))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("1004", "700", "", "999", "the bot itself: left out"))
	edit := discordtest.Message("1001", "500", "77", "1", "edited")
	edit["edited_timestamp"] = "2026-11-23T10:05:00.000000+00:00"
	b.fake.Dispatch(discord.EventMessageUpdate, edit)
	b.fake.Dispatch(discord.EventMessageUpdate, map[string]any{"id": "1002", "channel_id": "600", "embeds": []any{}})
	b.fake.Dispatch(discord.EventMessageDelete, map[string]any{"id": "1003", "channel_id": "700"})
	// Bad input: skipped, the connection stays.
	b.fake.Raw([]byte("{not json"))
	b.fake.Raw([]byte(`{"op":0,"s":null,"t":"MESSAGE_CREATE","d":` + strings.Repeat(" ", 100<<10) + `{}}`))
	b.fake.Dispatch(discord.EventMessageCreate, map[string]any{"id": "not-a-snowflake", "channel_id": "1"})
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("1005", "500", "77", "1", "after the bad ones"))

	ids := b.waitStored(t, 5)
	require.Equal(t, []string{"1001", "1002", "1003", "1001:edit:2026-11-23T10:05:00.000000+00:00", "1003:delete", "1005"}, b.waitStored(t, 6))
	_ = ids
	st := b.fake.Stats()
	require.Equal(t, 1, st.Conns, "bad payloads must not cost the connection")
	lastSeq := st.Seq
	sid, seq, _, _ := b.session(t)
	require.Equal(t, "s1", sid)
	require.Equal(t, lastSeq, seq, "the last message's sequence is committed with it")

	var env envelope.Message
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT envelope FROM mio.inbox WHERE account_id = $1 AND source_message_id = '1003'`,
			b.account).Scan(&env)
	}))
	require.Equal(t, envelope.ConversationDM, env.Conversation.Type)
	require.Equal(t, "a DM", env.Text)
	require.Equal(t, "2", env.Sender.ID)

	// The edit and the delete point at their stored originals (edit_of).
	for src, orig := range map[string]string{"1001:edit:2026-11-23T10:05:00.000000+00:00": "1001", "1003:delete": "1003"} {
		var changed, original envelope.Message
		require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
			q := `SELECT envelope FROM mio.inbox WHERE account_id = $1 AND source_message_id = $2`
			if err := tx.QueryRow(context.Background(), q, b.account, src).Scan(&changed); err != nil {
				return err
			}
			return tx.QueryRow(context.Background(), q, b.account, orig).Scan(&original)
		}))
		require.NotNil(t, changed.EditOf, "%s has no edit_of", src)
		require.NotNil(t, changed.EditOf.ID, "%s: edit_of.id of a stored original", src)
		require.Equal(t, original.ID, *changed.EditOf.ID, src)
		require.Equal(t, orig, changed.EditOf.SourceMessageID, src)
		require.Equal(t, orig, changed.EditOf.PlatformMessageID, src)
	}
}

func TestResumeReplaysFromStoredSequence(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	b.manager(t)
	b.waitFake(t, "identify", identified(1))
	for i := range 3 {
		b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message(fmt.Sprint(2000+i), "500", "77", "1", "before"))
	}
	b.waitStored(t, 3)
	_, stored, _, _ := b.session(t)
	b.fake.Drop()
	// Sent while the connection is down: the resume replays them.
	for i := 3; i < 6; i++ {
		b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message(fmt.Sprint(2000+i), "500", "77", "1", "during"))
	}
	b.waitFake(t, "resume", func(f discordtest.Stats) bool { return len(f.Resumes) >= 1 })
	ids := b.waitStored(t, 6)
	require.Len(t, ids, 6)
	st := b.fake.Stats()
	require.Equal(t, []int64{stored}, st.Resumes, "RESUME carries the stored sequence")
	require.Equal(t, 1, st.Identifies)
	require.Zero(t, b.lost.Load())
}

func TestZombieConnectionReconnects(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	// 200 ms, not less: under a loaded CI machine a 30 ms interval let
	// the first connection zombie before READY (so it identified instead
	// of resuming) and the second miss an ACK by scheduling delay alone.
	b.fake.SetHeartbeatInterval(200)
	b.fake.WithholdACK(1)
	b.manager(t)
	b.waitFake(t, "identify", identified(1))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("3001", "500", "77", "1", "x"))
	// No ACK on the first connection: the client drops it and resumes.
	b.waitFake(t, "resume after a missing ACK", func(f discordtest.Stats) bool { return len(f.Resumes) >= 1 && f.Conns >= 2 })
	require.Positive(t, testutil.ToFloat64(b.metrics.Reconnects.WithLabelValues("zombie")))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("3002", "500", "77", "1", "y"))
	require.Equal(t, []string{"3001", "3002"}, b.waitStored(t, 2))
}

func TestInvalidSessionReidentifies(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	b.manager(t)
	b.waitFake(t, "identify", identified(1))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("4001", "500", "77", "1", "x"))
	b.waitStored(t, 1)
	b.fake.Op(9, false)
	b.waitFake(t, "second identify", identified(2))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("4002", "500", "77", "1", "y"))
	require.Equal(t, []string{"4001", "4002"}, b.waitStored(t, 2))
	require.Eventually(t, func() bool { sid, _, _, _ := b.session(t); return sid == "s2" }, 10*time.Second, 10*time.Millisecond)
	st := b.fake.Stats()
	require.Empty(t, st.Resumes, "a session that is not resumable is identified anew")
	require.Equal(t, int32(1), b.lost.Load(), "a lost session asks for a catch-up")
}

func TestTwoManagersOneConnection(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	m1, _ := b.manager(t)
	m2, _ := b.manager(t)
	b.waitFake(t, "identify", identified(1))
	start := m1.Scans() + m2.Scans()
	require.Eventually(t, func() bool { return m1.Scans()+m2.Scans() >= start+10 }, 20*time.Second, 10*time.Millisecond)
	for i := range 5 {
		b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message(fmt.Sprint(5000+i), "500", "77", "1", "x"))
	}
	require.Len(t, b.waitStored(t, 5), 5)
	st := b.fake.Stats()
	require.Equal(t, 1, st.Conns)
	require.Equal(t, 1, st.MaxLive)
	require.Equal(t, 1, m1.Held()+m2.Held())
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Sessions), "the managers share the gauge here")
}

func TestTakeoverAfterHolderDies(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	_, stop1 := b.manager(t)
	b.waitFake(t, "identify", identified(1))
	for i := range 3 {
		b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message(fmt.Sprint(6000+i), "500", "77", "1", "first holder"))
	}
	b.waitStored(t, 3)
	_, stored, holder1, _ := b.session(t)
	require.NotNil(t, holder1)

	// The holder dies without releasing its lease (kill -9).
	stop1(true)
	b.waitFake(t, "connection gone", func(f discordtest.Stats) bool { return f.Live == 0 })
	_, _, held, _ := b.session(t)
	require.Equal(t, holder1, held, "a dead holder keeps its lease until it expires")
	for i := 3; i < 6; i++ {
		b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message(fmt.Sprint(6000+i), "500", "77", "1", "while nobody holds it"))
	}
	m2, _ := b.manager(t)
	b.waitFake(t, "resume by the new holder", func(f discordtest.Stats) bool { return len(f.Resumes) >= 1 })
	require.Len(t, b.waitStored(t, 6), 6)
	st := b.fake.Stats()
	require.Equal(t, []int64{stored}, st.Resumes, "the new holder resumes from the stored sequence")
	require.Equal(t, 1, st.Identifies)
	require.Equal(t, 1, m2.Held())
	_, _, holder2, _ := b.session(t)
	require.NotEqual(t, holder1, holder2)
}

func TestWrongTokenDisablesAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, "wrong-token")
	m, _ := b.manager(t)
	b.waitFake(t, "first connection", func(f discordtest.Stats) bool { return f.Conns >= 1 })
	require.Eventually(t, func() bool { _, _, _, e := b.session(t); return e != "" }, 20*time.Second, 10*time.Millisecond)
	start := m.Scans()
	require.Eventually(t, func() bool { return m.Scans() >= start+10 }, 20*time.Second, 10*time.Millisecond)
	_, _, _, reason := b.session(t)
	require.Contains(t, reason, "4004")
	require.Contains(t, reason, "token")
	st := b.fake.Stats()
	require.Equal(t, 1, st.Conns, "no reconnect storm")
	var status string
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		a, err := db.AccountGet(context.Background(), tx, b.tenant, b.account)
		status = a.Status
		return err
	}))
	require.Equal(t, db.AccountDisabled, status)
	require.Zero(t, m.Held())
	// The reason is on the account as the admin API and `mio admin account
	// show` show it (both answer with admin.Service.AccountShow).
	info, err := admin.New(b.env.Pool, nil, "http://mio.test").AccountShow(context.Background(), b.tenant, b.account)
	require.NoError(t, err)
	require.Contains(t, info.DisabledReason, "4004")
	require.Contains(t, info.DisabledReason, "token")
}

func TestLeaseFencesWritesAndSpacesIdentifies(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	ctx := context.Background()
	a := &db.GatewayLeaseParams{TenantID: b.tenant, AccountID: b.account, Holder: uuid.New(), TTL: time.Hour}
	other := *a
	other.Holder = uuid.New()
	inTx := func(fn func(tx pgx.Tx) error) error { return db.InTenantTx(ctx, b.env.Pool, b.tenant, fn) }

	require.NoError(t, inTx(func(tx pgx.Tx) error { _, err := db.GatewayLeaseAcquire(ctx, tx, a); return err }))
	err := inTx(func(tx pgx.Tx) error { _, err := db.GatewayLeaseAcquire(ctx, tx, &other); return err })
	require.ErrorIs(t, err, db.ErrNotFound, "a live lease is not taken")

	// One IDENTIFY slot per interval, whoever asks.
	var first, second *db.GatewayIdentifySlot
	require.NoError(t, inTx(func(tx pgx.Tx) error {
		var err error
		first, err = db.GatewayIdentifyTake(ctx, tx, a, time.Hour)
		return err
	}))
	require.NoError(t, inTx(func(tx pgx.Tx) error {
		var err error
		second, err = db.GatewayIdentifyTake(ctx, tx, a, time.Hour)
		return err
	}))
	require.Zero(t, first.Wait)
	require.Greater(t, second.Wait, 59*time.Minute)
	require.Equal(t, 1, first.Identifies)
	require.Equal(t, 2, second.Identifies, "IDENTIFYs are counted per day")
	require.Greater(t, second.WindowLeft, 23*time.Hour)
	// A day later the window starts again.
	require.NoError(t, inTx(func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE mio.gateway_sessions SET identify_window = now() - interval '25 hours', identify_at = now()`)
		return err
	}))
	require.NoError(t, inTx(func(tx pgx.Tx) error {
		var err error
		second, err = db.GatewayIdentifyTake(ctx, tx, a, time.Hour)
		return err
	}))
	require.Equal(t, 1, second.Identifies)

	// The lease expires; another holder takes it; the first can no longer
	// record a resume point (its message commits roll back).
	require.NoError(t, inTx(func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE mio.gateway_sessions SET lease_until = now() - interval '1 second'`)
		return err
	}))
	require.NoError(t, inTx(func(tx pgx.Tx) error { _, err := db.GatewayLeaseAcquire(ctx, tx, &other); return err }))
	err = inTx(func(tx pgx.Tx) error {
		return db.GatewaySessionSave(ctx, tx, &db.GatewaySessionSaveParams{TenantID: b.tenant, AccountID: b.account,
			Holder: a.Holder, SessionID: "s", Seq: 9})
	})
	require.ErrorIs(t, err, db.ErrNotFound)
	require.ErrorIs(t, inTx(func(tx pgx.Tx) error { return db.GatewayLeaseRenew(ctx, tx, a) }), db.ErrNotFound)
}

func TestLostLeaseStopsSession(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	m, _ := b.manager(t)
	b.waitFake(t, "identify", identified(1))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("7001", "500", "77", "1", "x"))
	b.waitStored(t, 1)
	// Another process took the account over (this one stalled past its
	// lease): the next commit is refused and the session stops.
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE mio.gateway_sessions SET holder = $1, lease_until = now() + interval '1 hour'`, uuid.New())
		return err
	}))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("7002", "500", "77", "1", "y"))
	b.waitFake(t, "connection closed", func(f discordtest.Stats) bool { return f.Live == 0 })
	require.Eventually(t, func() bool { return m.Held() == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"7001"}, b.stored(t), "a holder without its lease writes nothing")
}

func TestDailyIdentifyBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	m, _ := b.manager(t, func(c *discord.SourceConfig) { c.IdentifyDailyLimit = 1 })
	b.waitFake(t, "identify", identified(1))
	b.fake.Op(9, false)
	b.waitFake(t, "reconnect", func(f discordtest.Stats) bool { return f.Conns >= 2 })
	start := m.Scans()
	require.Eventually(t, func() bool { return m.Scans() >= start+10 }, 20*time.Second, 10*time.Millisecond)
	st := b.fake.Stats()
	require.Equal(t, 1, st.Identifies, "past the day's budget the session waits instead of identifying")
	require.Equal(t, 1, m.Held(), "and keeps its lease while it waits")
}

// gaps returns each conversation's catch-up gap (gap_after, gap_before).
func (b *testBundle) gaps(t *testing.T) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT conversation_id, gap_after, gap_before FROM mio.source_cursors WHERE account_id = $1`, b.account)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var conv, after, before string
			if err := rows.Scan(&conv, &after, &before); err != nil {
				return err
			}
			out[conv] = [2]string{after, before}
		}
		return rows.Err()
	}))
	return out
}

func TestLostSessionOpensGaps(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	// A conversation stored before this process held the account, with no
	// session to resume (e.g. an earlier session lost before a restart).
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return db.SourceCursorAdvance(context.Background(), tx, b.tenant, b.account,
			db.SourceCursor{ConversationID: "500", ConversationType: envelope.ConversationChannel, LastSourceID: "100"})
	}))
	b.manager(t)
	b.waitFake(t, "identify", identified(1))
	require.Eventually(t, func() bool { sid, _, _, _ := b.session(t); return sid == "s1" }, 10*time.Second, 10*time.Millisecond)
	// IDENTIFY opened the gap at the last stored id; READY bounded it at
	// the session's start (a snowflake of now + the clock tolerance).
	g := b.gaps(t)["500"]
	require.Equal(t, "100", g[0])
	readyBound := discord.SnowflakeAt(time.Now())
	require.True(t, len(g[1]) == len(readyBound) && g[1] > readyBound, "bound %q at the session's start", g[1])

	// The first live message lowers the bound to its id; later ones do not.
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("8001", "500", "77", "1", "x"))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("8002", "600", "77", "1", "y"))
	b.waitStored(t, 2)
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("8003", "500", "77", "1", "z"))
	b.waitStored(t, 3)
	gs := b.gaps(t)
	require.Equal(t, [2]string{"100", "8001"}, gs["500"])
	require.Equal(t, [2]string{"", ""}, gs["600"], "a new conversation has no gap")

	// A resumed session replays what it missed: no gap.
	b.fake.Drop()
	b.waitFake(t, "resume", func(f discordtest.Stats) bool { return len(f.Resumes) >= 1 })
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("8004", "600", "77", "1", "after the resume"))
	b.waitStored(t, 4)
	gs = b.gaps(t)
	require.Equal(t, [2]string{"100", "8001"}, gs["500"])
	require.Equal(t, [2]string{"", ""}, gs["600"])

	// A session that cannot be resumed: every conversation gets a gap at
	// its last stored id; an open gap keeps its older start.
	b.fake.Op(9, false)
	b.waitFake(t, "identify again", identified(2))
	require.Eventually(t, func() bool { sid, _, _, _ := b.session(t); return sid == "s2" }, 10*time.Second, 10*time.Millisecond)
	gs = b.gaps(t)
	require.Equal(t, "100", gs["500"][0])
	require.Equal(t, "8004", gs["600"][0])
	for conv, g := range gs {
		require.True(t, len(g[1]) == len(readyBound) && g[1] > readyBound, "%s: bound %q at the new session's start", conv, g[1])
	}
}

func TestTakeoverWithExpiredSessionOpensGaps(t *testing.T) {
	t.Parallel()
	b := setup(t, "good-token")
	_, stop1 := b.manager(t)
	b.waitFake(t, "identify", identified(1))
	b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message("9001", "500", "77", "1", "x"))
	b.waitStored(t, 1)
	// The holder dies (kill -9) and its session expires at Discord before
	// another process takes over: the RESUME is refused.
	stop1(true)
	b.waitFake(t, "connection gone", func(f discordtest.Stats) bool { return f.Live == 0 })
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE mio.gateway_sessions SET session_id = 'expired'`)
		return err
	}))
	require.Equal(t, [2]string{"", ""}, b.gaps(t)["500"])
	b.manager(t)
	b.waitFake(t, "identify by the new holder", identified(2))
	require.Eventually(t, func() bool { sid, _, _, _ := b.session(t); return sid == "s2" }, 10*time.Second, 10*time.Millisecond)
	require.Len(t, b.fake.Stats().Resumes, 1, "the RESUME was tried first")
	g := b.gaps(t)["500"]
	require.Equal(t, "9001", g[0], "the gap starts at the last message the dead holder stored")
	require.NotEmpty(t, g[1])
}
