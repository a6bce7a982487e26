package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
)

const testToken = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"

// fakeSlack is an httptest fake of users.info. workspaces maps a bot token
// to its workspace's users, each user id to its JSON answer; an unknown
// token answers invalid_auth and an unknown id user_not_found.
type fakeSlack struct {
	srv        *httptest.Server
	calls      atomic.Int64
	workspaces map[string]map[string]string
	// block, when set, makes every call wait until the client gives up.
	block bool
}

// newFakeSlack returns a fake whose only workspace has testToken.
func newFakeSlack(t *testing.T, users map[string]string) *fakeSlack {
	t.Helper()
	return newFakeSlackWorkspaces(t, map[string]map[string]string{testToken: users})
}

func newFakeSlackWorkspaces(t *testing.T, workspaces map[string]map[string]string) *fakeSlack {
	t.Helper()
	f := &fakeSlack{workspaces: workspaces}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		token, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		users, known := f.workspaces[token]
		if r.URL.Path != "/users.info" || r.Method != http.MethodGet || !hasBearer || !known {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
			return
		}
		if f.block {
			<-r.Context().Done()
			return
		}
		answer, ok := users[r.URL.Query().Get("user")]
		if !ok {
			answer = `{"ok":false,"error":"user_not_found"}`
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write([]byte(answer))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func userAnswer(team, id, displayName, realName string) string {
	b, _ := json.Marshal(map[string]any{
		"ok": true,
		"user": map[string]any{
			"id": id, "team_id": team, "name": "login", "real_name": realName,
			"profile": map[string]any{"display_name": displayName, "real_name": realName, "image_48": "https://example.com/a.png"},
		},
	})
	return string(b)
}

// messageBody is a signed-ready event_callback from user in team.
func messageBody(team, user, eventID string) []byte {
	return []byte(`{"type":"event_callback","team_id":"` + team + `","event_id":"` + eventID +
		`","event":{"type":"message","user":"` + user + `","channel":"C1","channel_type":"channel","ts":"1531420618.000200","text":"hi"}}`)
}

func parseSender(t *testing.T, in channels.Inbound, body []byte) string {
	t.Helper()
	got, err := in.Parse(context.Background(), signedRequest(body))
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	return got.Messages[0].Sender.DisplayName
}

func TestDisplayNameLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer string
		want   string
	}{
		{name: "display name", answer: userAnswer("T1", "U1", "bobby", "Robert Tables"), want: "bobby"},
		{name: "real name fallback", answer: userAnswer("T1", "U1", "", "Robert Tables"), want: "Robert Tables"},
		{name: "no names", answer: userAnswer("T1", "U1", "", ""), want: ""},
		{name: "malformed answer", answer: `{"ok":true,"user":`, want: ""},
		{name: "refused", answer: `{"ok":false,"error":"missing_scope"}`, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeSlack(t, map[string]string{"U1": tt.answer})
			ch := New(Options{APIBaseURL: fake.srv.URL})
			in := newTestInbound(t, ch, `{"bot_token":"`+testToken+`"}`)
			require.Equal(t, tt.want, parseSender(t, in, messageBody("T1", "U1", "Ev1")))
			require.EqualValues(t, 1, fake.calls.Load())
		})
	}
}

func TestDisplayNameCache(t *testing.T) {
	t.Parallel()
	fake := newFakeSlack(t, map[string]string{"U1": userAnswer("T1", "U1", "bobby", "Robert")})
	ch := New(Options{APIBaseURL: fake.srv.URL})
	in := newTestInbound(t, ch, `{"bot_token":"`+testToken+`"}`)

	require.Equal(t, "bobby", parseSender(t, in, messageBody("T1", "U1", "Ev1")))
	require.Equal(t, "bobby", parseSender(t, in, messageBody("T1", "U1", "Ev2")))
	require.EqualValues(t, 1, fake.calls.Load(), "second message must hit the cache")

	// Another account of the same workspace shares the entry.
	other := newTestInbound(t, ch, `{"bot_token":"`+testToken+`"}`)
	require.Equal(t, "bobby", parseSender(t, other, messageBody("T1", "U1", "Ev3")))
	require.EqualValues(t, 1, fake.calls.Load(), "the cache is shared across accounts")

	// Refusals are remembered per account.
	require.Empty(t, parseSender(t, in, messageBody("T1", "U404", "Ev4")))
	require.Empty(t, parseSender(t, in, messageBody("T1", "U404", "Ev5")))
	require.EqualValues(t, 2, fake.calls.Load())
}

func TestDisplayNameCacheExpires(t *testing.T) {
	t.Parallel()
	fake := newFakeSlack(t, map[string]string{"U1": userAnswer("T1", "U1", "bobby", "")})
	var mu sync.Mutex
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ch := New(Options{APIBaseURL: fake.srv.URL, NameCacheTTL: time.Minute, Now: clock})
	in := newTestInbound(t, ch, `{"bot_token":"`+testToken+`"}`)

	require.Equal(t, "bobby", parseSender(t, in, messageBody("T1", "U1", "Ev1")))
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	require.Equal(t, "bobby", parseSender(t, in, messageBody("T1", "U1", "Ev2")))
	require.EqualValues(t, 2, fake.calls.Load(), "an expired entry is looked up again")
}

func TestDisplayNameNotPoisonedAcrossTenants(t *testing.T) {
	t.Parallel()
	// The attacker's workspace T2 has a user U1 named "ceo". A signed body
	// from the attacker's account claiming team T1 must not plant that
	// name for T1's accounts.
	const attackerToken = "xoxb-2-attacker"
	fake := newFakeSlackWorkspaces(t, map[string]map[string]string{
		attackerToken: {"U1": userAnswer("T2", "U1", "ceo", "")},
		testToken:     {"U1": userAnswer("T1", "U1", "intern", "")},
	})
	ch := New(Options{APIBaseURL: fake.srv.URL})
	attacker := newTestInbound(t, ch, `{"bot_token":"`+attackerToken+`"}`)
	require.Equal(t, "ceo", parseSender(t, attacker, messageBody("T1", "U1", "Ev1")))

	victim := newTestInbound(t, ch, `{"bot_token":"`+testToken+`"}`)
	require.Equal(t, "intern", parseSender(t, victim, messageBody("T1", "U1", "Ev2")))
	require.EqualValues(t, 2, fake.calls.Load(), "the victim's lookup must reach Slack")
}

func TestDisplayNameSlowLookup(t *testing.T) {
	t.Parallel()
	fake := newFakeSlack(t, nil)
	fake.block = true
	ch := New(Options{APIBaseURL: fake.srv.URL, LookupTimeout: 50 * time.Millisecond})
	in := newTestInbound(t, ch, `{"bot_token":"`+testToken+`"}`)

	start := time.Now()
	require.Empty(t, parseSender(t, in, messageBody("T1", "U1", "Ev1")))
	require.Less(t, time.Since(start), time.Second, "Parse must not wait for a slow users.info")
	require.EqualValues(t, 1, fake.calls.Load())
}

func TestDisplayNameUnreachableAPI(t *testing.T) {
	t.Parallel()
	fake := newFakeSlack(t, nil)
	fake.srv.Close()
	ch := New(Options{APIBaseURL: fake.srv.URL})
	in := newTestInbound(t, ch, `{"bot_token":"`+testToken+`"}`)
	require.Empty(t, parseSender(t, in, messageBody("T1", "U1", "Ev1")))
}

func TestDisplayNameHTTPError(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "<html>oops</html>", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	ch := New(Options{APIBaseURL: srv.URL})
	in := newTestInbound(t, ch, `{"bot_token":"`+testToken+`"}`)
	require.Empty(t, parseSender(t, in, messageBody("T1", "U1", "Ev1")))
	require.Empty(t, parseSender(t, in, messageBody("T1", "U1", "Ev2")))
	require.EqualValues(t, 2, calls.Load(), "transient failures are not cached")
}

func TestDisplayNameWithoutToken(t *testing.T) {
	t.Parallel()
	fake := newFakeSlack(t, map[string]string{"U1": userAnswer("T1", "U1", "bobby", "")})
	ch := New(Options{APIBaseURL: fake.srv.URL})
	in := newTestInbound(t, ch, "")
	require.Empty(t, parseSender(t, in, messageBody("T1", "U1", "Ev1")))
	require.Zero(t, fake.calls.Load())
}

// TestDisplayNameWithRotatingGrant: an account with token rotation looks
// names up with the token its TokenSource gives (no bot_token).
func TestDisplayNameWithRotatingGrant(t *testing.T) {
	t.Parallel()
	fake := newFakeSlack(t, map[string]string{"U1": userAnswer("T1", "U1", "bobby", "")})
	ch := New(Options{APIBaseURL: fake.srv.URL})
	in, err := ch.NewInbound(channels.Account{ID: uuid.New(), TenantID: uuid.New(), WebhookSecret: testSecret,
		Credentials: json.RawMessage(`{"client_id":"1.2","client_secret":"s","refresh_token":"xoxe-1-r"}`),
		Tokens:      staticTokens(testToken)})
	require.NoError(t, err)
	require.Equal(t, "bobby", parseSender(t, in, messageBody("T1", "U1", "Ev1")))
}

func TestNameCacheBounded(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	c := newNameCache(2, time.Hour, func() time.Time { return now })
	c.put("a", "A", time.Hour)
	c.put("b", "B", time.Hour)
	_, ok := c.get("a") // a is now the most recently used
	require.True(t, ok)
	c.put("c", "C", time.Hour)
	require.Equal(t, 2, c.len())
	_, ok = c.get("b")
	require.False(t, ok, "the least recently used entry is evicted")
	name, ok := c.get("a")
	require.True(t, ok)
	require.Equal(t, "A", name)
	c.put("a", "A2", time.Hour)
	name, _ = c.get("a")
	require.Equal(t, "A2", name)
	require.Equal(t, 2, c.len())
}

func TestDisplayNameConcurrent(t *testing.T) {
	t.Parallel()
	fake := newFakeSlack(t, map[string]string{"U1": userAnswer("T1", "U1", "bobby", "")})
	ch := New(Options{APIBaseURL: fake.srv.URL, NameCacheSize: 4})
	acctID := uuid.NewString()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := "U1"
			if i%2 == 1 {
				user = "U" + uuid.NewString()[:6]
			}
			_ = ch.displayName(context.Background(), ch.apiBase, acctID, staticTokens(testToken), "T1", user)
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, ch.names.len(), 4)
}
