package workers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
)

// slackTS is message n's ts (one width, like Slack's).
func slackTS(n int) string { return fmt.Sprintf("17000%05d.000100", n) }

// fakeSlackHistory serves conversations.history of one channel holding
// messages first..last: newest first within (oldest, latest), has_more
// when the window holds more, 429 with Retry-After when told to.
type fakeSlackHistory struct {
	srv         *httptest.Server
	channel     string
	first, last int
	mu          sync.Mutex
	calls       int
	limited     func(call int) (retryAfter int, limited bool)
}

func newFakeSlackHistory(t *testing.T, channel string, first, last int) *fakeSlackHistory {
	f := &fakeSlackHistory{channel: channel, first: first, last: last}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls++
		call, limited := f.calls, f.limited
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer xoxb-history" {
			_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
			return
		}
		if limited != nil {
			if ra, ok := limited(call); ok {
				w.Header().Set("Retry-After", strconv.Itoa(ra))
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
				return
			}
		}
		q := r.URL.Query()
		if r.URL.Path != "/conversations.history" || q.Get("channel") != f.channel || q.Get("inclusive") != "false" {
			_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
			return
		}
		oldest, latest := q.Get("oldest"), q.Get("latest")
		limit, _ := strconv.Atoi(q.Get("limit"))
		var page []map[string]any
		more := false
		for n := f.last; n >= f.first; n-- { // newest first
			ts := slackTS(n)
			if (latest != "" && ts >= latest) || (oldest != "" && ts <= oldest) {
				continue
			}
			if len(page) == limit {
				more = true
				break
			}
			page = append(page, map[string]any{"type": "message", "user": "U1", "username": "u", "text": "m" + strconv.Itoa(n), "ts": ts})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": page, "has_more": more})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func newSlackReconcileBundle(t *testing.T, apiBase string) *reconcileBundle {
	t.Helper()
	return newReconcileBundleFor(t, &accounts.Spec{ChannelType: envelope.ChannelSlack, DisplayName: "s",
		WebhookSecret: "signing-secret",
		Settings:      json.RawMessage(fmt.Sprintf(`{"api_base_url": %q}`, apiBase)),
		Credentials:   json.RawMessage(`{"bot_token": "xoxb-history"}`)})
}

// webhook stores messages as the Events API delivers them: keyed by event
// id, with the ts as platform id. It returns how many were stored.
func (b *reconcileBundle) webhook(t *testing.T, channel string, ns ...int) int {
	t.Helper()
	acct := &accounts.Account{ID: b.account, TenantID: b.tenant, ChannelType: envelope.ChannelSlack}
	stored := 0
	for _, n := range ns {
		msg := envelope.Message{ChannelType: envelope.ChannelSlack, SourceMessageID: "Ev" + strconv.Itoa(n),
			PlatformMessageID: slackTS(n), Text: "live",
			Conversation: envelope.Conversation{ID: channel, Type: envelope.ConversationChannel}}
		req := ingest.Prepare(acct, &channels.Parsed{Messages: []envelope.Message{msg}}, nil, msg.SentAt)
		res, err := b.ingester.Ingest(context.Background(), req)
		require.NoError(t, err)
		stored += len(res.Inserted)
	}
	return stored
}

// slackStored returns, per Slack ts, how many inbox rows the account has.
func (b *reconcileBundle) slackStored(t *testing.T) (perTS map[string]int, rows int) {
	t.Helper()
	perTS = map[string]int{}
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		if err := tx.QueryRow(context.Background(), `SELECT count(*) FROM mio.inbox WHERE account_id = $1`, b.account).Scan(&rows); err != nil {
			return err
		}
		r, err := tx.Query(context.Background(), `SELECT r.platform_message_id FROM mio.inbound_refs r
			JOIN mio.inbox i ON i.id = r.message_id WHERE r.account_id = $1`, b.account)
		if err != nil {
			return err
		}
		ts, err := pgx.CollectRows(r, pgx.RowTo[string])
		for _, x := range ts {
			perTS[x]++
		}
		return err
	}))
	return perTS, rows
}

func (b *reconcileBundle) requireSlackOnce(t *testing.T, first, last int) {
	t.Helper()
	perTS, rows := b.slackStored(t)
	require.Equal(t, last-first+1, rows, "inbox rows")
	require.Len(t, perTS, last-first+1)
	for n := first; n <= last; n++ {
		require.Equal(t, 1, perTS[slackTS(n)], "message %d", n)
	}
}

// Webhooks stored 1..10, then 500 messages were missed: the reconciler
// reads conversations.history (newest first) and stores each missed
// message once; those it reads again that came by webhook are not stored
// twice, nor is a webhook redelivering one it recovered.
func TestReconcileSlackFillsGapOf500(t *testing.T) {
	t.Parallel()
	fake := newFakeSlackHistory(t, "C500", 1, 510)
	b := newSlackReconcileBundle(t, fake.srv.URL)
	require.Equal(t, 10, b.webhook(t, "C500", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10))

	b.run(t)
	b.requireSlackOnce(t, 1, 510)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelSlack)))

	var env envelope.Message
	var source string
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT i.source_message_id, i.envelope FROM mio.inbox i
			JOIN mio.inbound_refs r ON r.message_id = i.id WHERE r.platform_message_id = $1`, slackTS(200)).Scan(&source, &env)
	}))
	require.Equal(t, "C500:"+slackTS(200), source, "history messages are keyed <channel>:<ts>")
	require.Equal(t, "m200", env.Text)
	require.Equal(t, "C500", env.Conversation.ID)

	// The same message by webhook (its own event id) is a duplicate.
	require.Zero(t, b.webhook(t, "C500", 200, 510))
	// Idempotent: a second run finds nothing new.
	callCount := func() int { fake.mu.Lock(); defer fake.mu.Unlock(); return fake.calls }
	calls := callCount()
	b.run(t)
	b.requireSlackOnce(t, 1, 510)
	require.Equal(t, calls+1, callCount(), "one call: nothing after the cursor")
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelSlack)))
}

// Short 429s are waited out within a run; a long one ends the run, which
// keeps what it stored and where its walk stood, and the next run goes on
// from there: every message once.
func TestReconcileSlack429(t *testing.T) {
	t.Parallel()
	fake := newFakeSlackHistory(t, "C600", 1, 510)
	b := newSlackReconcileBundle(t, fake.srv.URL)
	b.webhook(t, "C600", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)

	fake.mu.Lock()
	fake.limited = func(call int) (int, bool) {
		switch {
		case call <= 4:
			return 1, call%2 == 1 // short: waited out
		default:
			return 60, true // long: ends the run
		}
	}
	fake.mu.Unlock()
	b.run(t)
	// Two pages stored: the newest (411..510) and the next (311..410).
	perTS, rows := b.slackStored(t)
	require.Equal(t, 210, rows)
	require.Equal(t, 1, perTS[slackTS(311)])
	require.Zero(t, perTS[slackTS(310)])
	require.Positive(t, testutil.ToFloat64(b.metrics.Calls.WithLabelValues(envelope.ChannelSlack, "rate_limited")))

	fake.mu.Lock()
	fake.limited = nil
	fake.mu.Unlock()
	b.run(t)
	b.requireSlackOnce(t, 1, 510)
	require.Equal(t, 500.0, testutil.ToFloat64(b.metrics.Recovered.WithLabelValues(envelope.ChannelSlack)))
}
