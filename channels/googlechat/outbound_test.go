package googlechat

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/outbound golden files")

const testSpace = "spaces/AAAAdRk7Z1M"

// grantTokens is a TokenSource that exchanges the grant for every token
// and counts the exchanges (MIO's engine caches and shares them; these
// tests exercise the adapter alone).
type grantTokens struct {
	g channels.Grant

	mu        sync.Mutex
	exchanges int
	stale     []string
}

func (s *grantTokens) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.exchanges++
	s.mu.Unlock()
	tok, err := s.g.Exchange(ctx)
	if err != nil {
		return "", err
	}
	return tok.Token, nil
}

func (s *grantTokens) Renew(ctx context.Context, stale string) (string, error) {
	s.mu.Lock()
	s.stale = append(s.stale, stale)
	s.mu.Unlock()
	return s.Token(ctx)
}

// staticTokens always gives the same token: a stale one when the fake did
// not issue it.
type staticTokens string

func (s staticTokens) Token(context.Context) (string, error)         { return string(s), nil }
func (s staticTokens) Renew(context.Context, string) (string, error) { return string(s), nil }

// newOutbound is a sender for an account of f, with tokens (a grantTokens
// of the account's grant when nil).
func newOutbound(t *testing.T, f *channelstest.FakeGoogle, tokens channels.TokenSource) (*outbound, *grantTokens) {
	t.Helper()
	ch := testChannel()
	acct := channels.Account{ExternalID: testProject, Settings: f.Settings("", ""), Credentials: f.Credentials()}
	var gt *grantTokens
	if tokens == nil {
		g, err := ch.Grant(acct)
		require.NoError(t, err)
		require.NotNil(t, g)
		gt = &grantTokens{g: g}
		tokens = gt
	}
	acct.Tokens = tokens
	out, err := ch.NewOutbound(acct)
	require.NoError(t, err)
	return out.(*outbound), gt
}

func TestSendCreatesMessage(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	out, _ := newOutbound(t, f, nil)
	res, err := out.Send(context.Background(), &channels.OutboundMessage{Attempt: 1, IdempotencyKey: "key-1",
		ConversationID: testSpace, Text: "order 42 shipped"})
	require.NoError(t, err)
	require.Regexp(t, `^spaces/AAAAdRk7Z1M/messages/\S+$`, res.ProviderMessageID)
	require.Equal(t, "key-1", res.IdempotencyKey)
	calls := f.Calls()
	require.Len(t, calls, 1)
	require.Equal(t, http.MethodPost, calls[0].Method)
	require.Equal(t, "/v1/spaces/AAAAdRk7Z1M/messages", calls[0].Path)
	require.Equal(t, "requestId=key-1", calls[0].Query)
	require.Equal(t, map[string]any{"text": "order 42 shipped"}, calls[0].Body)
	require.Equal(t, "order 42 shipped", f.Text(res.ProviderMessageID))

	// A retried attempt with the same key gets the same message.
	again, err := out.Send(context.Background(), &channels.OutboundMessage{Attempt: 2, IdempotencyKey: "key-1",
		ConversationID: testSpace, Text: "order 42 shipped"})
	require.NoError(t, err)
	require.Equal(t, res.ProviderMessageID, again.ProviderMessageID)
	require.Len(t, f.Calls(), 1)
}

func TestSendInThread(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	out, _ := newOutbound(t, f, nil)
	_, err := out.Send(context.Background(), &channels.OutboundMessage{Attempt: 1, ConversationID: testSpace,
		ThreadID: testSpace + "/threads/UxJ6C0t1sRE", Text: "in the thread"})
	require.NoError(t, err)
	calls := f.Calls()
	require.Len(t, calls, 1)
	require.Equal(t, "messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD", calls[0].Query)
	require.Equal(t, map[string]any{"name": testSpace + "/threads/UxJ6C0t1sRE"}, calls[0].Body["thread"])
}

func TestEditAndDelete(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	out, _ := newOutbound(t, f, nil)
	ctx := context.Background()
	res, err := out.Send(ctx, &channels.OutboundMessage{Attempt: 1, ConversationID: testSpace, Text: "draft"})
	require.NoError(t, err)

	edited, err := out.Edit(ctx, &channels.OutboundMessage{Attempt: 1, ConversationID: testSpace,
		EditProviderMessageID: res.ProviderMessageID, Text: "final"})
	require.NoError(t, err)
	require.Equal(t, res.ProviderMessageID, edited.ProviderMessageID)
	require.Equal(t, "final", f.Text(res.ProviderMessageID))
	calls := f.Calls()
	require.Equal(t, http.MethodPatch, calls[1].Method)
	require.Equal(t, "/v1/"+res.ProviderMessageID, calls[1].Path)
	require.Equal(t, "updateMask=text,cardsV2", calls[1].Query)

	require.NoError(t, out.Delete(ctx, testSpace, res.ProviderMessageID))
	require.Equal(t, "", f.Text(res.ProviderMessageID))
	require.Equal(t, http.MethodDelete, f.Calls()[2].Method)
	require.NoError(t, out.Delete(ctx, testSpace, res.ProviderMessageID), "a message already gone counts as deleted")

	_, err = out.Edit(ctx, &channels.OutboundMessage{Attempt: 1, EditProviderMessageID: res.ProviderMessageID, Text: "x"})
	require.Equal(t, "permanent", channelstest.ErrorKind(err), "editing a deleted message")
}

// TestSendRefusesNames: names that are not Chat resource names never
// reach a URL.
func TestSendRefusesNames(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	out, _ := newOutbound(t, f, nil)
	ctx := context.Background()
	for _, conv := range []string{"", "AAAA", "users/1", "spaces/../token", "spaces/a/messages/b", "spaces/a?x=1", "spaces/a/../../v1"} {
		_, err := out.Send(ctx, &channels.OutboundMessage{Attempt: 1, ConversationID: conv, Text: "x"})
		require.Equal(t, "permanent", channelstest.ErrorKind(err), conv)
	}
	_, err := out.Send(ctx, &channels.OutboundMessage{Attempt: 1, ConversationID: testSpace, ThreadID: "threads/x", Text: "x"})
	require.Equal(t, "permanent", channelstest.ErrorKind(err))
	for _, name := range []string{"", testSpace, testSpace + "/messages/../../x", "spaces/a/threads/b"} {
		_, err := out.Edit(ctx, &channels.OutboundMessage{Attempt: 1, EditProviderMessageID: name, Text: "x"})
		require.Equal(t, "permanent", channelstest.ErrorKind(err), name)
		require.Equal(t, "permanent", channelstest.ErrorKind(out.Delete(ctx, testSpace, name)), name)
	}
	_, err = out.Send(ctx, &channels.OutboundMessage{Attempt: 1, ConversationID: testSpace})
	require.Equal(t, "permanent", channelstest.ErrorKind(err), "nothing to send")
	require.Empty(t, f.Calls())
}

// TestSendRateLimited: a 429 waits its Retry-After, else backs off by
// attempt: 1 s, 2 s, 4 s, … up to MaxBackoff.
func TestSendRateLimited(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	out, _ := newOutbound(t, f, nil)
	send := func(attempt int) error {
		_, err := out.Send(context.Background(), &channels.OutboundMessage{Attempt: attempt, ConversationID: testSpace, Text: "x"})
		return err
	}
	f.Throttle(1, "7")
	var rl *channels.RateLimitedError
	require.ErrorAs(t, send(1), &rl)
	require.Equal(t, 7*time.Second, rl.RetryAfter)
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 8: MaxBackoff, 100: MaxBackoff} {
		f.Throttle(1, "")
		require.ErrorAs(t, send(attempt), &rl)
		require.Equal(t, want, rl.RetryAfter, "attempt %d", attempt)
	}
	require.NoError(t, send(1))
}

// TestSendAnswers: how the API's other answers are classified.
func TestSendAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   string
	}{
		{http.StatusBadRequest, "permanent"},
		{http.StatusForbidden, "permanent"},
		{http.StatusNotFound, "permanent"},
		{http.StatusRequestTimeout, "transient"},
		{http.StatusInternalServerError, "transient"},
		{http.StatusServiceUnavailable, "transient"},
	} {
		resp := &channels.APIAnswer{Status: tc.status, Body: []byte(`{"error":{"code":1,"message":"m","status":"S"}}`)}
		_, err := answer(opSend, resp, 1)
		require.Equal(t, tc.want, channelstest.ErrorKind(err), "HTTP %d", tc.status)
		require.Contains(t, err.Error(), "HTTP")
	}
}

// TestSendRenewsOnUnauthorized: a 401 renews the token once and sends
// again; a token refused again fails the send for good.
func TestSendRenewsOnUnauthorized(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)

	// The first token given is one the fake never issued.
	g, err := testChannel().Grant(channels.Account{ExternalID: testProject, Settings: f.Settings("", ""), Credentials: f.Credentials()})
	require.NoError(t, err)
	src := &staleFirst{grantTokens: grantTokens{g: g}}
	out, _ := newOutbound(t, f, src)
	_, err = out.Send(context.Background(), &channels.OutboundMessage{Attempt: 1, ConversationID: testSpace, Text: "x"})
	require.NoError(t, err)
	require.Equal(t, []string{"ya29.revoked"}, src.stale)
	require.Equal(t, 1, f.Refused())

	out, _ = newOutbound(t, f, staticTokens("ya29.revoked"))
	_, err = out.Send(context.Background(), &channels.OutboundMessage{Attempt: 1, ConversationID: testSpace, Text: "x"})
	require.Equal(t, "permanent", channelstest.ErrorKind(err))
	require.Equal(t, 3, f.Refused())
}

type staleFirst struct{ grantTokens }

func (s *staleFirst) Token(context.Context) (string, error) { return "ya29.revoked", nil }

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		msg    channels.OutboundMessage
	}{
		{"card.json", channels.OutboundMessage{Text: "Order <42> & co", RichContent: &envelope.RichContent{
			Title: "Order 42",
			Blocks: []envelope.RichBlock{
				{Type: envelope.BlockLabel, Text: "Status"},
				{Type: envelope.BlockText, Text: "Shipped <today>"},
				{Type: envelope.BlockList, Items: []string{"a & b", "c"}},
				{Type: envelope.BlockTable, Rows: [][]string{{"item", "qty"}, {"apple", "3"}}},
				{Type: envelope.BlockImage, URL: "https://img.example/p.png", Alt: "photo"},
			},
			Buttons: []envelope.RichButton{{Label: "Track", URL: "https://track.example/42"}, {Label: "Approve", Value: "approve"}, {Label: ""},
				{Label: "Ship", ActionID: "ship", Value: "order-42"}},
			Selects: []envelope.RichSelect{{ActionID: "region", Placeholder: "Pick a region",
				Options: []envelope.RichOption{{Label: "Europe (west)", Value: "eu-west"}, {Label: "US (east)", Value: "us-east"}}}},
		}}},
		{"card_only.json", channels.OutboundMessage{RichContent: &envelope.RichContent{Title: "Only a card"}}},
		{"attachments.json", channels.OutboundMessage{Text: "files", Attachments: []envelope.SendAttachment{
			{URL: "https://files.example/a.pdf", Name: "a.pdf"}, {URL: "https://files.example/b"}}}},
	} {
		body, err := render(&tc.msg)
		require.NoError(t, err, tc.golden)
		b, err := json.Marshal(body)
		require.NoError(t, err)
		channelstest.RequireGoldenJSON(t, filepath.Join("testdata", "outbound", tc.golden), b, *updateGolden)
	}
}
