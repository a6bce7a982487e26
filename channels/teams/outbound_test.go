package teams

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/outbound golden files")

const testConv = "19:7e8d0b3c2a1f4e6b9d5c8a7f6e5d4c3b@thread.tacv2"

// grantTokens is a TokenSource exchanging the account's grant directly:
// Token keeps the last token (or stale, when set); Renew exchanges again.
type grantTokens struct {
	grant channels.Grant
	mu    sync.Mutex
	token string
	renew int
}

func (g *grantTokens) Token(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.token != "" {
		return g.token, nil
	}
	at, err := g.grant.Exchange(ctx)
	if err != nil {
		return "", err
	}
	g.token = at.Token
	return g.token, nil
}

func (g *grantTokens) Renew(ctx context.Context, _ string) (string, error) {
	g.mu.Lock()
	g.token = ""
	g.renew++
	g.mu.Unlock()
	return g.Token(ctx)
}

// newSender is a sender of fake's bot, with the tokens it renews.
func newSender(t *testing.T, fake *channelstest.FakeTeams) (*outbound, *grantTokens) {
	t.Helper()
	ch := newTestChannel()
	acct := fakeAccount(fake)
	g, err := ch.Grant(acct)
	require.NoError(t, err)
	require.NotNil(t, g)
	tokens := &grantTokens{grant: g}
	acct.Tokens = tokens
	o, err := ch.NewOutbound(acct)
	require.NoError(t, err)
	return o.(*outbound), tokens
}

func TestSendPaths(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	o, _ := newSender(t, fake)
	ctx := context.Background()

	res, err := o.Send(ctx, &channels.OutboundMessage{ConversationID: testConv, Text: "hello"})
	require.NoError(t, err)
	require.Equal(t, "1700000000001", res.ProviderMessageID)

	_, err = o.Send(ctx, &channels.OutboundMessage{ConversationID: testConv, ThreadID: "1714564700001", Text: "in the thread"})
	require.NoError(t, err)
	_, err = o.Edit(ctx, &channels.OutboundMessage{ConversationID: testConv, EditProviderMessageID: res.ProviderMessageID, Text: "hello, edited"})
	require.NoError(t, err)
	require.NoError(t, o.Delete(ctx, testConv, res.ProviderMessageID))
	require.NoError(t, o.Typing(ctx, &channels.TypingSignal{ConversationID: testConv}))

	const base = "/v3/conversations/19:7e8d0b3c2a1f4e6b9d5c8a7f6e5d4c3b@thread.tacv2/activities"
	calls := fake.Calls()
	require.Len(t, calls, 5)
	for i, want := range []struct{ method, path string }{
		{http.MethodPost, base},
		{http.MethodPost, base + "/1714564700001"},
		{http.MethodPut, base + "/1700000000001"},
		{http.MethodDelete, base + "/1700000000001"},
		{http.MethodPost, base},
	} {
		require.Equal(t, want.method, calls[i].Method, "call %d", i)
		require.Equal(t, want.path, calls[i].Path, "call %d", i)
	}
	require.Equal(t, map[string]any{"type": "message", "text": "hello", "textFormat": "markdown"}, calls[0].Activity)
	require.Equal(t, "1714564700001", calls[1].Activity["replyToId"])
	require.Equal(t, map[string]any{"type": "message", "id": "1700000000001", "text": "hello, edited", "textFormat": "markdown"}, calls[2].Activity)
	require.Nil(t, calls[3].Activity)
	require.Equal(t, map[string]any{"type": "typing"}, calls[4].Activity)
}

func TestSendAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		respond func(http.ResponseWriter, *http.Request)
		kind    string
		wait    time.Duration
	}{
		{name: "created", respond: channelstest.Answer(http.StatusCreated, `{"id":"1"}`), kind: "none"},
		{name: "throttled", respond: channelstest.Answer(http.StatusTooManyRequests, `{"error":{"code":"TooManyRequests"}}`, "Retry-After", "3"),
			kind: "rate_limited", wait: 3 * time.Second},
		{name: "throttled without Retry-After", respond: channelstest.Answer(http.StatusTooManyRequests, ``), kind: "rate_limited", wait: DefaultRetryAfter},
		{name: "bad gateway", respond: channelstest.Answer(http.StatusBadGateway, `upstream`), kind: "transient"},
		{name: "not in the conversation", respond: channelstest.Answer(http.StatusForbidden,
			`{"error":{"code":"BotNotInConversationRoster","message":"The bot is not part of the conversation roster."}}`), kind: "permanent"},
		{name: "conversation not found", respond: channelstest.Answer(http.StatusNotFound, `{"error":{"code":"ConversationNotFound"}}`), kind: "permanent"},
		{name: "refused twice", respond: channelstest.Answer(http.StatusUnauthorized, `{"message":"Authorization has been denied"}`), kind: "permanent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(tc.respond))
			t.Cleanup(srv.Close)
			o := &outbound{apiBase: srv.URL, client: srv.Client(), tokens: staticTestTokens("tok")}
			_, err := o.Send(context.Background(), &channels.OutboundMessage{ConversationID: testConv, Text: "x"})
			require.Equal(t, tc.kind, channelstest.ErrorKind(err), "%v", err)
			if tc.wait > 0 {
				var rl *channels.RateLimitedError
				require.ErrorAs(t, err, &rl)
				require.Equal(t, tc.wait, rl.RetryAfter)
			}
		})
	}
}

type staticTestTokens string

func (s staticTestTokens) Token(context.Context) (string, error)         { return string(s), nil }
func (s staticTestTokens) Renew(context.Context, string) (string, error) { return string(s), nil }

// A token the Bot Connector refuses is renewed once and the send made
// again.
func TestSendRenewsRefusedToken(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	o, tokens := newSender(t, fake)
	tokens.token = "a-token-the-connector-never-issued"
	_, err := o.Send(context.Background(), &channels.OutboundMessage{ConversationID: testConv, Text: "x"})
	require.NoError(t, err)
	require.Equal(t, 1, tokens.renew)
	require.Equal(t, 1, fake.Refused())
	require.Len(t, fake.Calls(), 1)
}

func TestRenderCard(t *testing.T) {
	t.Parallel()
	act, err := render(&channels.OutboundMessage{
		Text:        "Deploy **finished**",
		Attachments: []envelope.SendAttachment{{URL: "https://files.example/log.txt", Name: "log.txt"}},
		RichContent: &envelope.RichContent{
			Title: "Release 1.4",
			Blocks: []envelope.RichBlock{
				{Type: envelope.BlockText, Text: "All checks passed."},
				{Type: envelope.BlockLabel, Text: "Services"},
				{Type: envelope.BlockList, Items: []string{"api", "worker"}},
				{Type: envelope.BlockTable, Rows: [][]string{{"region", "status"}, {"eu", "ok"}}},
				{Type: envelope.BlockImage, URL: "https://img.example/graph.png", Alt: "latency"},
				{Type: envelope.BlockText},
			},
			Buttons: []envelope.RichButton{{Label: "Open", URL: "https://ci.example/1"}, {Label: "Roll back", Value: "rollback:1.4"},
				{Label: "Approve", ActionID: "approve", Value: "run-42", Style: envelope.ButtonPrimary}},
			Selects: []envelope.RichSelect{{ActionID: "region", Placeholder: "Pick a region",
				Options: []envelope.RichOption{{Label: "Europe (west)", Value: "eu-west"}, {Label: "US (east)", Value: "us-east"}}}},
		},
	})
	require.NoError(t, err)
	b, err := json.Marshal(act)
	require.NoError(t, err)
	channelstest.RequireGoldenJSON(t, filepath.Join("testdata", "outbound", "card.json"), b, *updateGolden)

	_, err = render(&channels.OutboundMessage{})
	require.Error(t, err, "an empty message")
	_, err = render(&channels.OutboundMessage{RichContent: &envelope.RichContent{Buttons: []envelope.RichButton{{URL: "https://x"}}}})
	require.Error(t, err, "a button without a label")
}

// Replies go to the trusted serviceUrl of the conversation's latest
// activity; a conversation without one, an untrusted serviceUrl and
// another account's conversation go to the account's api_base_url.
func TestSendToTheConversationsServiceURL(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string][]string{}
	record := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got[name] = append(got[name], r.URL.EscapedPath())
			mu.Unlock()
			channelstest.Answer(http.StatusCreated, `{"id":"1"}`)(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	base, regional := record("base"), record("regional")
	ch := newTestChannel()
	acct := channels.Account{ID: uuid.New(), Settings: []byte(`{"api_base_url":"` + base.URL + `/teams"}`),
		Credentials: []byte(`{"app_id":"a","client_secret":"s"}`), Tokens: staticTestTokens("t")}
	in := newInbound(t, ch, acct)
	for conv, svc := range map[string]string{
		"19:x@thread.tacv2;messageid=1": regional.URL + "/amer/",
		"19:y@thread.tacv2":             "https://evil.example/amer/",
	} {
		body, _ := json.Marshal(map[string]any{"type": "message", "id": "1", "channelId": "msteams", "serviceUrl": svc,
			"conversation": map[string]string{"id": conv}, "from": map[string]string{"id": "u"}})
		_, err := in.Parse(context.Background(), &channels.Request{Body: body})
		require.NoError(t, err)
	}
	send := func(acct channels.Account, conv string) {
		o, err := ch.NewOutbound(acct)
		require.NoError(t, err)
		_, err = o.Send(context.Background(), &channels.OutboundMessage{ConversationID: conv, Text: "x"})
		require.NoError(t, err)
	}
	send(acct, "19:x@thread.tacv2")
	send(acct, "19:y@thread.tacv2")
	other := acct
	other.ID = uuid.New()
	send(other, "19:x@thread.tacv2")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string][]string{
		"regional": {"/amer/v3/conversations/19:x@thread.tacv2/activities"},
		"base":     {"/teams/v3/conversations/19:y@thread.tacv2/activities", "/teams/v3/conversations/19:x@thread.tacv2/activities"},
	}, got)
}
