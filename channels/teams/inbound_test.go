package teams

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

var testNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// signedRequest is body as Teams posts it, its token changed by o.
func signedRequest(t *testing.T, fake *channelstest.FakeTeams, body []byte, o channelstest.TokenOptions) *channels.Request {
	t.Helper()
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Authorization", fake.Sign(t, body, testNow, o))
	return &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow}
}

func newInbound(t *testing.T, ch *Channel, acct channels.Account) channels.Inbound {
	t.Helper()
	in, err := ch.NewInbound(acct)
	require.NoError(t, err)
	return in
}

func TestVerifyToken(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	in := newInbound(t, newTestChannel(), fakeAccount(fake))
	body := channelstest.ReadFixture(t, "message_channel_thread_mention.json")
	for _, tc := range []struct {
		name string
		opts channelstest.TokenOptions
		now  time.Time
		body []byte
		ok   bool
	}{
		{name: "signed", ok: true},
		{name: "forged", opts: channelstest.TokenOptions{Forged: true}},
		{name: "wrong audience", opts: channelstest.TokenOptions{Audience: "another-bot"}},
		{name: "wrong issuer", opts: channelstest.TokenOptions{Issuer: "https://sts.windows.net/x/"}},
		{name: "expired", opts: channelstest.TokenOptions{Lifetime: -ClockSkew - time.Second}},
		{name: "expired within the clock skew", opts: channelstest.TokenOptions{Lifetime: -ClockSkew + time.Second}, ok: true},
		{name: "unknown key", opts: channelstest.TokenOptions{KeyID: "another-key"}},
		{name: "serviceurl of another host", opts: channelstest.TokenOptions{ServiceURL: "https://evil.example/"}},
		{name: "serviceUrl not a connector host, token bound to it",
			body: []byte(`{"type":"message","id":"1","channelId":"msteams","serviceUrl":"https://evil.example/teams/"}`)},
		{name: "serviceUrl with a trailing slash less", opts: channelstest.TokenOptions{ServiceURL: "https://SMBA.trafficmanager.net/amer"}, ok: true},
		{name: "no channelId", body: []byte(`{"type":"message","serviceUrl":"https://smba.trafficmanager.net/amer/"}`)},
		{name: "another channel than the key's endorsements",
			body: []byte(`{"type":"message","channelId":"skype","serviceUrl":"https://smba.trafficmanager.net/amer/"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := body
			if tc.body != nil {
				b = tc.body
			}
			err := in.Verify(context.Background(), signedRequest(t, fake, b, tc.opts))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, channels.ErrUnauthorized)
		})
	}
	t.Run("no bearer", func(t *testing.T) {
		req := signedRequest(t, fake, body, channelstest.TokenOptions{})
		req.Header.Set("Authorization", "Basic "+req.Header.Get("Authorization")[len("Bearer "):])
		require.ErrorIs(t, in.Verify(context.Background(), req), channels.ErrUnauthorized)
	})
}

// Tokens of another algorithm than RS256 are refused: an HMAC token
// (algorithm confusion) and an unsigned one.
func TestVerifyRefusesOtherAlgorithms(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	in := newInbound(t, newTestChannel(), fakeAccount(fake))
	body := channelstest.ReadFixture(t, "message_personal_file.json")
	claims := jwt.MapClaims{"iss": Issuer, "aud": fake.AppID, "serviceurl": "https://smba.trafficmanager.net/emea/",
		"nbf": testNow.Add(-time.Minute).Unix(), "exp": testNow.Add(time.Hour).Unix()}
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	hs.Header["kid"] = fake.KeyID
	signed, err := hs.SignedString([]byte(fake.KeyID))
	require.NoError(t, err)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, claims)
	none.Header["kid"] = fake.KeyID
	unsigned, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	for _, tok := range []string{signed, unsigned} {
		req := signedRequest(t, fake, body, channelstest.TokenOptions{})
		req.Header.Set("Authorization", "Bearer "+tok)
		require.ErrorIs(t, in.Verify(context.Background(), req), channels.ErrUnauthorized)
	}
}

// A key set without the activity's channel among a key's endorsements
// refuses its tokens.
func TestVerifyEndorsements(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	fake.SetEndorsements("skype", "webchat")
	in := newInbound(t, newTestChannel(), fakeAccount(fake))
	req := signedRequest(t, fake, channelstest.ReadFixture(t, "message_personal_file.json"), channelstest.TokenOptions{})
	require.ErrorIs(t, in.Verify(context.Background(), req), channels.ErrUnauthorized)
}

// The keys are fetched once and kept; a token naming an unknown kid
// fetches them again at most once per refresh interval.
func TestSigningKeysCachedAndRefreshBounded(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	ch := newTestChannel()
	clock := testNow
	ch.keys.now = func() time.Time { return clock }
	in := newInbound(t, ch, fakeAccount(fake))
	body := channelstest.ReadFixture(t, "message_personal_file.json")
	for range 5 {
		require.NoError(t, in.Verify(context.Background(), signedRequest(t, fake, body, channelstest.TokenOptions{})))
	}
	require.Equal(t, 1, fake.KeyRequests(), "keys fetched once for five tokens")
	for range 5 {
		err := in.Verify(context.Background(), signedRequest(t, fake, body, channelstest.TokenOptions{KeyID: "rolled-over"}))
		require.ErrorIs(t, err, channels.ErrUnauthorized)
	}
	require.Equal(t, 1, fake.KeyRequests(), "unknown kids within the refresh interval fetch nothing")
	clock = clock.Add(DefaultKeyRefreshInterval)
	err := in.Verify(context.Background(), signedRequest(t, fake, body, channelstest.TokenOptions{KeyID: "rolled-over"}))
	require.ErrorIs(t, err, channels.ErrUnauthorized)
	require.Equal(t, 2, fake.KeyRequests(), "an unknown kid after the interval refreshes the keys")
	require.NoError(t, in.Verify(context.Background(), signedRequest(t, fake, body, channelstest.TokenOptions{})))
	require.Equal(t, 2, fake.KeyRequests())
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	in := newInbound(t, newTestChannel(), fakeAccount(fake))
	parse := func(t *testing.T, name string) *channels.Parsed {
		req := signedRequest(t, fake, channelstest.ReadFixture(t, name), channelstest.TokenOptions{})
		require.NoError(t, in.Verify(context.Background(), req))
		p, err := in.Parse(context.Background(), req)
		require.NoError(t, err)
		return p
	}
	one := func(t *testing.T, name string) envelope.Message {
		p := parse(t, name)
		require.Len(t, p.Messages, 1)
		m := p.Messages[0]
		m.Raw = nil
		return m
	}
	const channelConv = "19:7e8d0b3c2a1f4e6b9d5c8a7f6e5d4c3b@thread.tacv2"
	const personalConv = "a:1XJKJMvc5GBtc2JwZq0oj8tHZmzrQgFmB39ATiQWA85gQtHieVkKilBZ9XHoq9j7Zaqt7CZ-NJWi7me2kHTL3Bw"
	const megan = "29:1XJKJMvc5GBtc2JwZq0oj8tHZmzrQgFmB39ATiQWA85gQtHieVkKilBZ9XHoq9j7Zaqt7CZ-NJWi7me2kHTL3Bw"

	t.Run("personal chat with a file", func(t *testing.T) {
		m := one(t, "message_personal_file.json")
		require.Equal(t, envelope.Message{
			ChannelType:       envelope.ChannelTeams,
			SourceMessageID:   "1:1fZ6R2UEXfJh_5oXKuNbB3XWbTZyJY5FPyWQzAcAHcbM",
			PlatformMessageID: "1:1fZ6R2UEXfJh_5oXKuNbB3XWbTZyJY5FPyWQzAcAHcbM",
			Conversation:      envelope.Conversation{ID: personalConv, Type: envelope.ConversationDM},
			Sender:            envelope.Sender{ID: megan, DisplayName: "Megan Bowen"},
			Text:              "Here is the quarterly report",
			Attachments: []envelope.Attachment{{Kind: envelope.KindFile, Name: "report.pdf", Status: envelope.AttachmentPending,
				Source: &envelope.AttachmentSource{URL: "https://contoso-my.sharepoint.com/personal/megan_contoso_com/_layouts/15/download.aspx?UniqueId=4f2d5b2e-0d3f-4b6e-8c6f-1d1e2f3a4b5c&Translate=false&tempauth=eyJ0eXAi"}}},
			SentAt: time.Date(2024, 5, 1, 11, 59, 30, 123456700, time.UTC),
		}, m)
	})
	t.Run("channel thread, the bot mentioned", func(t *testing.T) {
		m := one(t, "message_channel_thread_mention.json")
		require.Equal(t, envelope.Conversation{ID: channelConv, Type: envelope.ConversationChannel, Title: "Planning"}, m.Conversation)
		require.Equal(t, "1714564700001", m.ThreadID)
		require.Equal(t, "1714564700001", m.ReplyToSourceID)
		require.Equal(t, "can you summarise this thread for @Megan Bowen?", m.Text, "the bot's mention stripped, others kept")
		require.Empty(t, m.Attachments, "the text/html copy is not an attachment")
	})
	t.Run("group chat with an inline image", func(t *testing.T) {
		m := one(t, "message_group_inline_image.json")
		require.Equal(t, envelope.Conversation{ID: "19:meeting_ZmQ4YjM1NzEtYTY3Zi00NDM3LWJmZTctMmU3ZjcyMDk0NTNj@thread.v2",
			Type: envelope.ConversationGroup, Title: "Launch crew"}, m.Conversation)
		require.Equal(t, "what is in this screenshot?", m.Text)
		require.Equal(t, []envelope.Attachment{{Kind: envelope.KindImage, MimeType: "image/*", Status: envelope.AttachmentPending,
			Source: &envelope.AttachmentSource{URL: "https://smba.trafficmanager.net/amer/v3/attachments/0-eus-d2-6a3b6c0f8f5d3e1c9b7a/views/original"}}},
			m.Attachments)
	})
	t.Run("edit", func(t *testing.T) {
		m := one(t, "message_update.json")
		require.True(t, m.Edited)
		require.Equal(t, envelope.NewEditRef("1714564790123"), m.EditOf)
		require.Equal(t, "1714564790123:edit:2024-05-01T12:00:10.007Z", m.SourceMessageID)
		require.Empty(t, m.PlatformMessageID)
		require.Equal(t, "can you summarise this thread, please?", m.Text)
		require.Equal(t, channelConv, m.Conversation.ID)
	})
	t.Run("delete", func(t *testing.T) {
		m := one(t, "message_delete.json")
		require.True(t, m.Deleted)
		require.Equal(t, envelope.NewEditRef("1:1fZ6R2UEXfJh_5oXKuNbB3XWbTZyJY5FPyWQzAcAHcbM"), m.EditOf)
		require.Equal(t, "1:1fZ6R2UEXfJh_5oXKuNbB3XWbTZyJY5FPyWQzAcAHcbM:delete", m.SourceMessageID)
		require.Empty(t, m.Text)
	})
	t.Run("a card button clicked", func(t *testing.T) {
		m := one(t, "message_card_submit.json")
		require.Equal(t, envelope.KindInteraction, m.Kind)
		require.Equal(t, &envelope.Interaction{ActionID: "approve", Value: "run-42", MessageID: "1714564980123"}, m.Interaction)
		require.Equal(t, "run-42", m.Text)
		require.Equal(t, "1:1pA3sUbMiTcL1cKvAlUeXWbTZyJY5FPyWQzAcAHcbQ", m.SourceMessageID)
	})
	t.Run("an Action.Execute clicked: an invoke answered after the commit", func(t *testing.T) {
		p := parse(t, "invoke_action_execute.json")
		require.Len(t, p.Messages, 1)
		m := p.Messages[0]
		require.Equal(t, envelope.KindInteraction, m.Kind)
		require.Equal(t, &envelope.Interaction{ActionID: "approve", Value: "run-42", MessageID: "1714564980123"}, m.Interaction)
		require.Equal(t, "f:7a1c2e3b-9d4f-4b8e-a6c5-2f1e0d9c8b7a", m.SourceMessageID)
		require.Equal(t, megan, m.Sender.ID)
		require.Equal(t, personalConv, m.Conversation.ID)
		require.Empty(t, m.PlatformMessageID)
		require.NotNil(t, p.Reply, "the Bot Framework waits for an invoke response")
		require.Equal(t, 200, p.Reply.Status)
		require.JSONEq(t, `{"statusCode":200,"type":"application/vnd.microsoft.activity.message","value":"Approve"}`, string(p.Reply.Body),
			"the message shown is the label of the button clicked")
		require.NoError(t, channelstest.CheckTeamsInvokeResponse(p.Reply.Body))
	})
	t.Run("a select chosen: the Input.ChoiceSet's value", func(t *testing.T) {
		p := parse(t, "invoke_select.json")
		require.Len(t, p.Messages, 1)
		require.Equal(t, &envelope.Interaction{ActionID: "region", Value: "eu-west", Values: []string{"eu-west"}, MessageID: "1714564980123"}, p.Messages[0].Interaction)
		require.JSONEq(t, `{"statusCode":200,"type":"application/vnd.microsoft.activity.message","value":"Choose"}`, string(p.Reply.Body))
	})
	t.Run("reactions added and removed", func(t *testing.T) {
		p := parse(t, "message_reaction.json")
		require.Len(t, p.Messages, 2)
		require.Nil(t, p.Reply)
		for i, want := range []struct {
			key string
			r   envelope.Reaction
		}{
			{"f:1f0c7d8e-4a2b-4c6d-9e8f-0a1b2c3d4e5f:reaction:like:added", envelope.Reaction{Emoji: "like", Added: true, MessageID: "1714564980123"}},
			{"f:1f0c7d8e-4a2b-4c6d-9e8f-0a1b2c3d4e5f:reaction:heart:removed", envelope.Reaction{Emoji: "heart", MessageID: "1714564980123"}},
		} {
			m := p.Messages[i]
			require.Equal(t, envelope.KindReaction, m.Kind)
			require.Equal(t, want.key, m.SourceMessageID)
			require.Equal(t, &want.r, m.Reaction)
			require.Equal(t, megan, m.Sender.ID)
			require.Empty(t, m.PlatformMessageID)
		}
	})
	t.Run("members added", func(t *testing.T) {
		p := parse(t, "conversation_update_members_added.json")
		require.Empty(t, p.Messages)
		require.Equal(t, []string{"teams: conversationUpdate (members added)"}, p.Ignored)
	})
}

func TestParseRefusals(t *testing.T) {
	t.Parallel()
	in := newInbound(t, newTestChannel(), channels.Account{Credentials: []byte(`{"app_id":"a"}`)})
	for name, body := range map[string]string{
		"no type":            `{"id":"1"}`,
		"no id":              `{"type":"message","channelId":"msteams","conversation":{"id":"c"},"from":{"id":"u"}}`,
		"no conversation":    `{"type":"message","id":"1","channelId":"msteams","from":{"id":"u"}}`,
		"only a thread root": `{"type":"message","id":"1","channelId":"msteams","conversation":{"id":";messageid=1"},"from":{"id":"u"}}`,
		"no sender":          `{"type":"message","id":"1","channelId":"msteams","conversation":{"id":"c"}}`,
		"not an object":      `[]`,
		"a string id":        `{"type":"message","id":1}`,
	} {
		_, err := in.Parse(context.Background(), &channels.Request{Body: []byte(body)})
		var bad *channels.BadRequestError
		require.ErrorAs(t, err, &bad, name)
	}
	p, err := in.Parse(context.Background(), &channels.Request{Body: []byte(`{"type":"message","id":"1","channelId":"slack","conversation":{"id":"c"},"from":{"id":"u"}}`)})
	require.NoError(t, err)
	require.Empty(t, p.Messages)
	require.NotEmpty(t, p.Ignored, "an activity of another Bot Framework channel is ignored")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	ch := New(Options{})
	cfg, err := ch.ParseConfig(channels.Account{Credentials: []byte(`{"app_id":"app","client_secret":"s","tenant_id":"contoso.onmicrosoft.com"}`)})
	require.NoError(t, err)
	require.Equal(t, Config{APIBaseURL: DefaultAPIBaseURL, AppID: "app", ClientSecret: "s", TenantID: "contoso.onmicrosoft.com",
		OpenIDMetadataURL: DefaultOpenIDMetadataURL,
		TokenURL:          "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token"}, cfg, "single tenant: the tenant's token endpoint")
	cfg, err = ch.ParseConfig(channels.Account{Credentials: []byte(`{"app_id":"app"}`)})
	require.NoError(t, err)
	require.Equal(t, DefaultTokenURL, cfg.TokenURL)
	for name, acct := range map[string]channels.Account{
		"no app id":             {},
		"http token url":        {Credentials: []byte(`{"app_id":"a"}`), Settings: []byte(`{"token_url":"http://login.example/token"}`)},
		"tenant with a slash":   {Credentials: []byte(`{"app_id":"a","tenant_id":"x/../y"}`)},
		"app id with a space":   {Credentials: []byte(`{"app_id":"a b"}`)},
		"metadata not absolute": {Credentials: []byte(`{"app_id":"a"}`), Settings: []byte(`{"openid_metadata_url":"/openid"}`)},
	} {
		_, err := ch.NewInbound(acct)
		require.ErrorIs(t, err, channels.ErrInvalidConfig, name)
	}
	_, err = ch.NewOutbound(channels.Account{Credentials: []byte(`{"app_id":"a"}`)})
	require.ErrorIs(t, err, channels.ErrInvalidConfig, "sending needs a client secret")
}

func TestTrustedServiceURLs(t *testing.T) {
	t.Parallel()
	tr := trustedHosts{baseHost: "127.0.0.1", baseHTTP: true}
	for u, want := range map[string]bool{
		"https://smba.trafficmanager.net/amer/":              true,
		"https://smba.trafficmanager.net.evil.example/amer/": false,
		"https://europe.webchat.botframework.com/":           true,
		"https://botframework.com.evil.example/":             false,
		"https://evilbotframework.com/":                      false,
		"https://smba.infra.gcc.teams.microsoft.com/teams":   true,
		"http://smba.trafficmanager.net/amer/":               false,
		"https://user@smba.trafficmanager.net/amer/":         false,
		"http://127.0.0.1:8080/teams/":                       true,
		"http://127.0.0.2/teams/":                            false,
		"ftp://smba.trafficmanager.net/":                     false,
		"":                                                   false,
	} {
		require.Equal(t, want, tr.trusts(u), u)
	}
}

// TestSigningKeysUnavailableIsTransient: while the OpenID metadata cannot
// be read, an activity's token is neither accepted nor refused — Verify
// answers a transient error (the webhook is answered 503 and the Bot
// Service delivers it again), also within the refresh interval — and once
// the keys can be read, the same token is accepted.
func TestSigningKeysUnavailableIsTransient(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	var down atomic.Bool
	down.Store(true)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		http.Redirect(w, r, fake.URL+"/openid", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(proxy.Close)
	ch := newTestChannel()
	clock := testNow
	ch.keys.now = func() time.Time { return clock }
	acct := fakeAccount(fake)
	acct.Settings = []byte(strings.Replace(string(acct.Settings), fake.URL+"/openid", proxy.URL, 1))
	in := newInbound(t, ch, acct)
	body := channelstest.ReadFixture(t, "message_personal_file.json")
	for range 3 {
		err := in.Verify(context.Background(), signedRequest(t, fake, body, channelstest.TokenOptions{}))
		var transient *channels.TransientError
		require.ErrorAs(t, err, &transient, "metadata unavailable: %v", err)
		require.NotErrorIs(t, err, channels.ErrUnauthorized)
	}
	down.Store(false)
	clock = clock.Add(DefaultKeyRefreshInterval)
	require.NoError(t, in.Verify(context.Background(), signedRequest(t, fake, body, channelstest.TokenOptions{})))
}
