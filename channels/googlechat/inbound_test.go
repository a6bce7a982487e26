package googlechat

import (
	"context"
	"net/http"
	"net/http/httptest"
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

func newInbound(t *testing.T, ch *Channel, acct channels.Account) channels.Inbound {
	t.Helper()
	in, err := ch.NewInbound(acct)
	require.NoError(t, err)
	return in
}

func bearerRequest(token string, body []byte) *channels.Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return &channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: testNow}
}

// TestVerifyTokens: each form of Chat's token is accepted only with the
// account's audience, Chat's issuer (and email), a key of its own key set
// and within its lifetime.
func TestVerifyTokens(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	forger := channelstest.NewRSAKey(t)
	iat := testNow.Add(-time.Minute)
	chatClaims := func(aud string, iat time.Time) jwt.MapClaims {
		return jwt.MapClaims{"iss": ChatIssuer, "aud": aud, "iat": iat.Unix(), "exp": iat.Add(time.Hour).Unix()}
	}
	oidcClaims := func(aud, email string, verified bool) jwt.MapClaims {
		return jwt.MapClaims{"iss": OIDCIssuer, "aud": aud, "email": email, "email_verified": verified,
			"iat": iat.Unix(), "exp": iat.Add(time.Hour).Unix()}
	}
	both := channels.Account{Settings: f.Settings(testProject, testEndpoint)}
	projectOnly := channels.Account{ExternalID: testProject, Settings: f.Settings("", "")}
	endpointOnly := channels.Account{Settings: f.Settings("", testEndpoint)}
	for _, tc := range []struct {
		name   string
		acct   channels.Account
		token  string
		wantOK bool
	}{
		{"project-number token", both, f.ChatToken(t, testProject, iat), true},
		{"project number from the external id", projectOnly, f.ChatToken(t, testProject, iat), true},
		{"ID token", both, f.OIDCToken(t, testEndpoint, iat), true},
		{"ID token, issuer without scheme", both, channelstest.SignGoogleToken(t, f.OIDCKey(), channelstest.FakeOIDCKeyID,
			jwt.MapClaims{"iss": "accounts.google.com", "aud": testEndpoint, "email": ChatIssuer, "email_verified": true,
				"iat": iat.Unix(), "exp": iat.Add(time.Hour).Unix()}), true},
		{"wrong audience (another project)", both, f.ChatToken(t, "999999999999", iat), false},
		{"wrong audience (another endpoint)", both, f.OIDCToken(t, "https://evil.example/webhooks/google_chat/x", iat), false},
		{"project audience in an ID token", both, f.OIDCToken(t, testProject, iat), false},
		{"project-number token, account takes ID tokens only", endpointOnly, f.ChatToken(t, testProject, iat), false},
		{"ID token, account takes project-number tokens only", projectOnly, f.OIDCToken(t, testEndpoint, iat), false},
		{"expired", both, f.ChatToken(t, testProject, testNow.Add(-time.Hour-Leeway-time.Second)), false},
		{"expired within the leeway", both, f.ChatToken(t, testProject, testNow.Add(-time.Hour-Leeway+time.Second)), true},
		{"issued in the future", both, f.ChatToken(t, testProject, testNow.Add(Leeway+time.Second)), false},
		{"forged with the key id of Chat's key", both, channelstest.SignGoogleToken(t, forger, channelstest.FakeChatKeyID, chatClaims(testProject, iat)), false},
		{"signed by the OIDC key for the x509 form", both, channelstest.SignGoogleToken(t, f.OIDCKey(), channelstest.FakeChatKeyID, chatClaims(testProject, iat)), false},
		{"unknown issuer", both, channelstest.SignGoogleToken(t, forger, "k", jwt.MapClaims{"iss": "someone@example.com", "aud": testProject,
			"iat": iat.Unix(), "exp": iat.Add(time.Hour).Unix()}), false},
		{"ID token of another service account", both, channelstest.SignGoogleToken(t, f.OIDCKey(), channelstest.FakeOIDCKeyID,
			oidcClaims(testEndpoint, "other@system.gserviceaccount.com", true)), false},
		{"ID token with an unverified email", both, channelstest.SignGoogleToken(t, f.OIDCKey(), channelstest.FakeOIDCKeyID,
			oidcClaims(testEndpoint, ChatIssuer, false)), false},
		{"no exp", both, channelstest.SignGoogleToken(t, f.ChatKey(), channelstest.FakeChatKeyID,
			jwt.MapClaims{"iss": ChatIssuer, "aud": testProject, "iat": iat.Unix()}), false},
		{"HS256 with the public key id", both, hs256(t, chatClaims(testProject, iat)), false},
		{"alg none", both, none(t, chatClaims(testProject, iat)), false},
		{"not a JWT", both, "AbCdEf123456", false},
		{"no token", both, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := newInbound(t, testChannel(), tc.acct)
			err := in.Verify(context.Background(), bearerRequest(tc.token, []byte(`{}`)))
			if tc.wantOK {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, channels.ErrUnauthorized)
		})
	}
}

// TestKeysRefreshedOnUnknownKeyID: the key set is fetched once and
// cached; a token naming an unknown key id fetches it again (Google
// rotated its keys), at most once per KeyRefreshInterval however many
// such tokens arrive.
func TestKeysRefreshedOnUnknownKeyID(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	var fetches atomic.Int32
	rotated := atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		resp, err := http.Get(f.URL + "/certs")
		require.NoError(t, err)
		defer resp.Body.Close()
		var set map[string]string
		require.NoError(t, jsonDecode(resp, &set))
		if rotated.Load() {
			set["rotated-key"] = set[channelstest.FakeChatKeyID]
		}
		w.Header().Set("Content-Type", "application/json")
		require.NoError(t, jsonEncode(w, set))
	}))
	t.Cleanup(srv.Close)
	ch := New(Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}, KeyRefreshInterval: time.Hour})
	clock := time.Now()
	ch.keys.now = func() time.Time { return clock }
	in := newInbound(t, ch, channels.Account{Settings: []byte(`{"project_number":"` + testProject + `","certs_url":"` + srv.URL + `"}`)})
	verify := func(kid string) error {
		tok := channelstest.SignGoogleToken(t, f.ChatKey(), kid, jwt.MapClaims{"iss": ChatIssuer, "aud": testProject,
			"iat": testNow.Unix(), "exp": testNow.Add(time.Hour).Unix()})
		return in.Verify(context.Background(), bearerRequest(tok, nil))
	}

	require.NoError(t, verify(channelstest.FakeChatKeyID))
	require.NoError(t, verify(channelstest.FakeChatKeyID))
	require.EqualValues(t, 1, fetches.Load(), "the key set is cached")

	rotated.Store(true)
	for range 20 {
		require.ErrorIs(t, verify("rotated-key"), channels.ErrUnauthorized, "fetched within the interval: the new key is not known yet")
	}
	require.EqualValues(t, 1, fetches.Load(), "unknown key ids do not fetch within the interval")

	clock = clock.Add(time.Hour)
	require.NoError(t, verify("rotated-key"))
	require.EqualValues(t, 2, fetches.Load(), "an unknown key id fetches the set again after the interval")
	for range 20 {
		require.ErrorIs(t, verify("made-up"), channels.ErrUnauthorized)
	}
	require.EqualValues(t, 2, fetches.Load())
}

// TestParseFixtures: what each recorded event becomes.
func TestParseFixtures(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	in := newInbound(t, testChannel(), channels.Account{ExternalID: testProject, Settings: f.Settings("", "")})
	parse := func(name string) *channels.Parsed {
		p, err := in.Parse(context.Background(), bearerRequest("", channelstest.ReadFixture(t, name)))
		require.NoError(t, err)
		require.Equal(t, "{}", string(p.Reply.Body))
		return p
	}

	p := parse("message_space.json")
	require.Len(t, p.Messages, 1)
	m := p.Messages[0]
	require.Equal(t, "spaces/AAAAdRk7Z1M/messages/UxJ6C0t1sRE.UxJ6C0t1sRE", m.SourceMessageID)
	require.Equal(t, m.SourceMessageID, m.PlatformMessageID)
	require.Equal(t, envelope.Conversation{ID: "spaces/AAAAdRk7Z1M", Type: envelope.ConversationChannel, Title: "Orders"}, m.Conversation)
	require.Equal(t, "spaces/AAAAdRk7Z1M/threads/UxJ6C0t1sRE", m.ThreadID)
	require.Equal(t, envelope.Sender{ID: "users/112233445566778899000", DisplayName: "Ada Lovelace"}, m.Sender)
	require.Equal(t, "@MIO what is the status of order 42?", m.Text)
	require.Equal(t, time.Date(2024, 5, 1, 11, 59, 58, 123000, time.UTC), m.SentAt)
	require.False(t, m.Edited)

	m = parse("message_dm.json").Messages[0]
	require.Equal(t, envelope.ConversationDM, m.Conversation.Type)

	p = parse("message_attachment.json")
	m = p.Messages[0]
	require.Equal(t, envelope.ConversationGroup, m.Conversation.Type)
	require.Equal(t, []envelope.Attachment{
		{Kind: envelope.KindFile, Name: "invoice.pdf", MimeType: "application/pdf", Status: envelope.AttachmentPending,
			Source: &envelope.AttachmentSource{Ref: "AATUf-1-resource"}},
		{Kind: envelope.KindImage, Name: "photo.png", MimeType: "image/png", Status: envelope.AttachmentPending,
			Source: &envelope.AttachmentSource{Ref: "AATUf-2-resource"}},
	}, m.Attachments)
	require.Len(t, p.Ignored, 1, "the Drive file")

	m = parse("message_edited.json").Messages[0]
	require.True(t, m.Edited)
	require.Equal(t, "spaces/AAAAdRk7Z1M/messages/EdT.EdT@2024-05-01T11:59:39.25Z", m.SourceMessageID)
	require.Equal(t, envelope.NewEditRef("spaces/AAAAdRk7Z1M/messages/EdT.EdT"), m.EditOf)
	require.Equal(t, "spaces/AAAAdRk7Z1M/messages/UxJ6C0t1sRE.UxJ6C0t1sRE", m.ReplyToSourceID)

	m = parse("card_clicked.json").Messages[0]
	require.Equal(t, "approve order=42", m.Text, "another card's action: its name and parameters")
	require.Equal(t, envelope.KindInteraction, m.Kind)
	require.Equal(t, &envelope.Interaction{ActionID: "approve", MessageID: "spaces/AAAAdRk7Z1M/messages/bOt.bOt"}, m.Interaction)
	require.Equal(t, "users/112233445566778899000", m.Sender.ID)
	require.Equal(t, "spaces/AAAAdRk7Z1M/messages/bOt.bOt", m.ReplyToSourceID)
	require.Regexp(t, `^card_clicked:[0-9a-f]{32}$`, m.SourceMessageID)

	p = parse("card_clicked_button.json")
	require.Equal(t, emptyReply, p.Reply, "the synchronous answer, written after the commit")
	m = p.Messages[0]
	require.Equal(t, envelope.KindInteraction, m.Kind)
	require.Equal(t, &envelope.Interaction{ActionID: "approve", Value: "run-42", MessageID: "spaces/AAAAdRk7Z1M/messages/bOt.bOt"}, m.Interaction)
	require.Equal(t, "run-42", m.Text)

	m = parse("card_clicked_select.json").Messages[0]
	require.Equal(t, &envelope.Interaction{ActionID: "region", Value: "eu-west", Values: []string{"eu-west"},
		MessageID: "spaces/AAAAdRk7Z1M/messages/bOt.bOt"}, m.Interaction)
	require.Equal(t, "eu-west", m.Text)

	for _, name := range []string{"added_to_space.json", "removed_from_space.json"} {
		p = parse(name)
		require.Empty(t, p.Messages, name)
		require.Len(t, p.Ignored, 1, name)
	}
}

// TestParseRefusesIncompleteEvents: events without what a message needs
// are bad requests.
func TestParseRefusesIncompleteEvents(t *testing.T) {
	t.Parallel()
	in := newInbound(t, testChannel(), channels.Account{ExternalID: testProject})
	for _, body := range []string{
		`{}`,
		`{"type":"MESSAGE"}`,
		`{"type":"MESSAGE","message":{"name":"spaces/a/messages/b"}}`,
		`{"type":"MESSAGE","message":{"name":"spaces/a/messages/b","space":{"name":"spaces/a"}}}`,
		`{"type":"CARD_CLICKED","space":{"name":"spaces/a"},"user":{"name":"users/1"}}`,
		`{"type":"CARD_CLICKED","action":{"actionMethodName":"x"},"user":{"name":"users/1"}}`,
		`{"type":"CARD_CLICKED","action":{"actionMethodName":"x"},"space":{"name":"spaces/a"}}`,
		`{"chat":{"messagePayload":{"message":{"name":"spaces/a/messages/b"}}},"commonEventObject":{}}`,
	} {
		_, err := in.Parse(context.Background(), bearerRequest("", []byte(body)))
		var bad *channels.BadRequestError
		require.ErrorAs(t, err, &bad, body)
	}
}

// TestConfigRefused: accounts without an audience, with a project number
// that is not one, or with URLs the policy refuses.
func TestConfigRefused(t *testing.T) {
	t.Parallel()
	ch := New(Options{})
	for _, acct := range []channels.Account{
		{},
		{Settings: []byte(`{"project_number":"abc"}`)},
		{ExternalID: "1", Settings: []byte(`{"project_number":"2"}`)},
		{Settings: []byte(`{"endpoint_url":"ftp://x"}`)},
		{ExternalID: "1", Settings: []byte(`{"certs_url":"http://keys.example/x"}`)},
		{ExternalID: "1", Settings: []byte(`{"api_base_url":"https://chat.example?x=1"}`)},
		{ExternalID: "1", Credentials: []byte(`{"client_email":"a@b","private_key":"not pem"}`)},
		{ExternalID: "1", Credentials: []byte(`{"client_email":"a@b"}`)},
		{ExternalID: "1", Credentials: []byte(`{"type":"authorized_user","client_email":"a@b","private_key":"x"}`)},
	} {
		_, err := ch.NewInbound(acct)
		require.ErrorIs(t, err, channels.ErrInvalidConfig, "%+v", acct)
	}
}

// TestKeysFetchedOnceConcurrently: concurrent first verifications wait
// for one fetch of the key set.
func TestKeysFetchedOnceConcurrently(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		time.Sleep(50 * time.Millisecond)
		http.Redirect(w, r, f.URL+"/certs", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	in := newInbound(t, testChannel(), channels.Account{Settings: []byte(`{"project_number":"` + testProject + `","certs_url":"` + srv.URL + `"}`)})
	tok := f.ChatToken(t, testProject, testNow.Add(-time.Minute))
	errs := make(chan error, 20)
	for range 20 {
		go func() { errs <- in.Verify(context.Background(), bearerRequest(tok, nil)) }()
	}
	for range 20 {
		require.NoError(t, <-errs)
	}
	require.EqualValues(t, 1, fetches.Load())
}

// TestKeysUnavailableIsTransient: while Google's key server fails, a
// token is neither accepted nor refused — Verify answers a transient error
// (the webhook is answered 503 and Chat delivers it again), also for the
// calls within the refresh interval — and once the keys can be read, the
// same token is accepted.
func TestKeysUnavailableIsTransient(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	down := atomic.Bool{}
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(f.URL + "/certs")
		require.NoError(t, err)
		defer resp.Body.Close()
		var set map[string]string
		require.NoError(t, jsonDecode(resp, &set))
		w.Header().Set("Content-Type", "application/json")
		require.NoError(t, jsonEncode(w, set))
	}))
	t.Cleanup(srv.Close)
	ch := New(Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}, KeyRefreshInterval: time.Hour})
	clock := time.Now()
	ch.keys.now = func() time.Time { return clock }
	in := newInbound(t, ch, channels.Account{Settings: []byte(`{"project_number":"` + testProject + `","certs_url":"` + srv.URL + `"}`)})
	tok := channelstest.SignGoogleToken(t, f.ChatKey(), channelstest.FakeChatKeyID, jwt.MapClaims{"iss": ChatIssuer, "aud": testProject,
		"iat": testNow.Unix(), "exp": testNow.Add(time.Hour).Unix()})
	verify := func() error { return in.Verify(context.Background(), bearerRequest(tok, nil)) }

	for range 3 {
		err := verify()
		var transient *channels.TransientError
		require.ErrorAs(t, err, &transient, "keys unavailable: %v", err)
		require.NotErrorIs(t, err, channels.ErrUnauthorized)
	}
	down.Store(false)
	clock = clock.Add(time.Hour)
	require.NoError(t, verify())
}
