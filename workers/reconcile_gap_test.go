package workers_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/discord"
	"github.com/miohq/mio/channels/discord/discordtest"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/sources"
)

// gapBundle is a Discord account held by a Gateway manager against the
// fake Gateway, whose REST history is a fakeDiscordHistory of one
// channel.
type gapBundle struct {
	*reconcileBundle
	fake    *discordtest.Gateway
	history *fakeDiscordHistory
	channel string
}

// lostSessionGap runs the scenario of a session lost for good: the live
// session stores 1001..1010 of channel, the Gateway invalidates it
// (INVALID_SESSION, not resumable), 500 messages (1011..1510) are posted
// while no session delivers them (they are only in the history), the new
// session delivers 1511..1513 live, advancing the cursor past the gap,
// all before the reconciler runs.
func lostSessionGap(t *testing.T, channel string) *gapBundle {
	t.Helper()
	history := newFakeDiscordHistory(t, channel, 1001, 1513)
	fake := discordtest.NewGateway(t, "history-token")
	rb := newReconcileBundleFor(t, &accounts.Spec{ChannelType: envelope.ChannelDiscord, DisplayName: "d",
		Settings:    []byte(fmt.Sprintf(`{"api_base_url": %q, "gateway_url": %q}`, history.srv.URL, fake.URL())),
		Credentials: []byte(`{"bot_token": "history-token"}`)})
	b := &gapBundle{reconcileBundle: rb, fake: fake, history: history, channel: channel}

	m := discord.NewManager(discord.SourceConfig{
		Gateway:          discord.GatewayOptions{ReconnectMin: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond},
		IdentifyInterval: 10 * time.Millisecond, LeaseTTL: time.Second, Scan: 50 * time.Millisecond,
	}, channels.SourceDeps{Store: sources.NewStore(b.env.Pool, b.resolver, b.ingester, nil, envelope.ChannelDiscord),
		Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	b.waitFake(t, "identify", func(s discordtest.Stats) bool { return s.Readies >= 1 && s.Connected })
	b.dispatch(1001, 1010)
	b.waitStored(t, 10)
	fake.Op(9, false)
	b.waitFake(t, "identify again", func(s discordtest.Stats) bool { return s.Readies >= 2 && s.Connected })
	b.dispatch(1511, 1513)
	b.waitStored(t, 13)
	require.Equal(t, "1513", b.cursor(t), "the new session moved the cursor past the gap")
	return b
}

func (b *gapBundle) dispatch(first, last int) {
	for id := first; id <= last; id++ {
		b.fake.Dispatch(discord.EventMessageCreate, discordtest.Message(strconv.Itoa(id), b.channel, "77", "7", "live"))
	}
}

func (b *gapBundle) waitFake(t *testing.T, what string, cond func(discordtest.Stats) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.True(t, b.fake.Wait(ctx, cond), "fake gateway: %s", what)
}

func (b *gapBundle) waitStored(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(b.stored(t)) >= n }, 20*time.Second, 10*time.Millisecond, "want %d stored", n)
}

// gap returns the conversation's gap columns.
func (b *gapBundle) gap(t *testing.T) (after, before string) {
	t.Helper()
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT gap_after, gap_before FROM mio.source_cursors WHERE conversation_id = $1`,
			b.channel).Scan(&after, &before)
	}))
	return after, before
}

func TestReconcileDiscordGapAfterLostSession(t *testing.T) {
	t.Parallel()
	b := lostSessionGap(t, "800")
	after, before := b.gap(t)
	require.Equal(t, "1010", after, "the gap starts at the last id stored before the loss")
	require.Equal(t, "1511", before, "and ends at the first message of the new session")

	b.run(t)
	b.requireExactlyOnce(t, 1001, 1513)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelDiscord)))
	after, before = b.gap(t)
	require.Empty(t, after+before, "the gap is closed")
	require.Equal(t, "1513", b.cursor(t), "the live cursor stays")

	// Idempotent: a second run reads after the cursor only.
	b.run(t)
	b.requireExactlyOnce(t, 1001, 1513)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelDiscord)))
}

func TestReconcileDiscordGap429(t *testing.T) {
	t.Parallel()
	b := lostSessionGap(t, "900")

	// After two pages of the gap the platform asks for a minute: the run
	// ends without error, keeping those pages and the gap's progress.
	b.history.mu.Lock()
	b.history.limited = func(call int) (float64, bool) { return 60, call > 2 }
	b.history.mu.Unlock()
	b.run(t)
	after, before := b.gap(t)
	require.Equal(t, "1210", after)
	require.Equal(t, "1511", before)
	require.Len(t, b.stored(t), 13+200)

	// Short 429s are waited out within the run; the gap closes.
	b.history.mu.Lock()
	b.history.limited = func(call int) (float64, bool) { return 0.05, call%2 == 1 }
	b.history.mu.Unlock()
	b.run(t)
	b.requireExactlyOnce(t, 1001, 1513)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelDiscord)))
	require.Positive(t, testutil.ToFloat64(b.metrics.Calls.WithLabelValues(envelope.ChannelDiscord, "rate_limited")))
	after, before = b.gap(t)
	require.Empty(t, after+before)
}

func TestReconcileDiscordGapWithoutEndStaysOpen(t *testing.T) {
	t.Parallel()
	fake := newFakeDiscordHistory(t, "950", 1001, 1300)
	b := newReconcileBundle(t, fake.srv.URL)
	b.live(t, "950", 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010)
	ctx := context.Background()
	inTx := func(fn func(tx pgx.Tx) error) {
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, fn))
	}
	gap := func() (after, before string) {
		inTx(func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT gap_after, gap_before FROM mio.source_cursors`).Scan(&after, &before)
		})
		return after, before
	}
	// The session is lost; no new one is established yet.
	inTx(func(tx pgx.Tx) error { return db.SourceCursorGapOpen(ctx, tx, b.tenant, b.account) })
	b.run(t)
	b.requireExactlyOnce(t, 1001, 1300)
	after, before := gap()
	require.Equal(t, "1300", after, "read to the channel's newest message")
	require.Empty(t, before, "but a gap without an end stays open: what is posted before the new session would be missed")

	// A walk that read towards an end that changed meanwhile (a new loss
	// or a lower bound) moves the gap's start but does not close it.
	inTx(func(tx pgx.Tx) error { return db.SourceCursorGapBound(ctx, tx, b.tenant, b.account, "1400") })
	inTx(func(tx pgx.Tx) error {
		return db.SourceCursorGapMove(ctx, tx, &db.SourceCursorGapMoveParams{TenantID: b.tenant, AccountID: b.account,
			ConversationID: "950", After: "1350", Close: true, SeenBefore: ""})
	})
	after, before = gap()
	require.Equal(t, [2]string{"1350", "1400"}, [2]string{after, before})
	inTx(func(tx pgx.Tx) error {
		return db.SourceCursorGapMove(ctx, tx, &db.SourceCursorGapMoveParams{TenantID: b.tenant, AccountID: b.account,
			ConversationID: "950", After: "1320", Close: false, SeenBefore: "1400"})
	})
	after, _ = gap()
	require.Equal(t, "1350", after, "the gap's start only moves forward")

	// The new session is established: the next run closes the gap at the
	// channel's newest message.
	b.run(t)
	after, before = gap()
	require.Empty(t, after+before)
	b.requireExactlyOnce(t, 1001, 1300)
	require.Equal(t, 290.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelDiscord)))
}
