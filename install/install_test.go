package install_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/channels/zohocliq"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/install"
	"github.com/miohq/mio/secretbox"
)

const publicURL = "https://mio.example"

type testBundle struct {
	env      *dbtest.Env
	box      *secretbox.Box
	registry *channels.Registry
	clock    *clock
	svc      *install.Service
	tenant   uuid.UUID
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	b := &testBundle{env: dbtest.New(t), box: box, clock: &clock{now: time.Now()},
		registry: builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})}
	b.svc = install.New(b.env.Pool, install.Config{Box: box, Registry: b.registry, PublicURL: publicURL, Now: b.clock.Now})
	tn, err := db.TenantInsert(context.Background(), b.env.Pool, uuid.Nil, "t")
	require.NoError(t, err)
	b.tenant = tn.ID
	return b
}

// begin begins an install and returns the consent page's query.
func (b *testBundle) begin(t *testing.T, p install.BeginParams) (string, url.Values) {
	t.Helper()
	p.TenantID = b.tenant
	p.Actor = "admin:test"
	begun, err := b.svc.Begin(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, publicURL+"/install/"+p.ChannelType+"/callback", begun.RedirectURI)
	require.WithinDuration(t, b.clock.Now().Add(install.StateTTL), begun.StateExpiresAt, time.Second)
	u, err := url.Parse(begun.AuthorizeURL)
	require.NoError(t, err)
	require.Equal(t, begun.RedirectURI, u.Query().Get("redirect_uri"))
	require.NotEmpty(t, u.Query().Get("state"))
	return u.Scheme + "://" + u.Host + u.Path, u.Query()
}

// counts are the tenant's accounts and pending installs.
func (b *testBundle) counts(t *testing.T) (accts int, pending int64) {
	t.Helper()
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		list, err := db.AccountList(context.Background(), tx, b.tenant, "")
		accts = len(list)
		if err != nil {
			return err
		}
		pending, err = db.PendingInstallCount(context.Background(), tx, b.tenant)
		return err
	}))
	return accts, pending
}

// account returns the installed account and its opened secrets.
func (b *testBundle) account(t *testing.T, id uuid.UUID) (*db.Account, map[string]string, string) {
	t.Helper()
	var a *db.Account
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		var err error
		a, err = db.AccountGet(context.Background(), tx, b.tenant, id)
		return err
	}))
	credJSON, err := b.box.Open(a.CredentialsEnc, []byte(id.String()+"/credentials"))
	require.NoError(t, err, "credentials sealed, bound to the account")
	var creds map[string]string
	require.NoError(t, json.Unmarshal(credJSON, &creds))
	secret, err := b.box.Open(a.WebhookSecretEnc, []byte(id.String()+"/webhook_secret"))
	require.NoError(t, err)
	return a, creds, string(secret)
}

func (b *testBundle) resolver() *accounts.Resolver {
	return accounts.NewResolver(b.env.Pool, accounts.ResolverConfig{Box: b.box, Registry: b.registry, Now: b.clock.Now})
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func slackBegin(fake *channelstest.FakeSlack) install.BeginParams {
	return install.BeginParams{ChannelType: "slack", DisplayName: "Acme Slack", Credentials: fake.AppCredentials(),
		Settings:      json.RawMessage(`{"api_base_url":"` + fake.URL + `","scopes":["chat:write","users:read"]}`),
		WebhookSecret: "slack-signing-secret"}
}

// TestInstallSlack: the consent page asks for the app's scopes; the
// callback exchanges the code and creates the workspace's account with a
// bot token, sealed, that sends through the fake; installing the same
// workspace again updates that account.
func TestInstallSlack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	page, q := b.begin(t, slackBegin(fake))
	require.Equal(t, "https://slack.com/oauth/v2/authorize", page)
	require.Equal(t, fake.ClientID, q.Get("client_id"))
	require.Equal(t, "chat:write,users:read", q.Get("scope"))
	_, pending := b.counts(t)
	require.EqualValues(t, 1, pending)

	res, err := b.svc.Complete(context.Background(), "slack", url.Values{"code": {fake.Code}, "state": {q.Get("state")}})
	require.NoError(t, err)
	require.True(t, res.Created)
	require.Equal(t, fake.TeamID, res.ExternalID)
	a, creds, secret := b.account(t, res.AccountID)
	require.Equal(t, "Acme Slack", a.DisplayName)
	require.Equal(t, map[string]string{"bot_token": "xoxb-static-1"}, creds)
	require.Equal(t, "slack-signing-secret", secret)
	require.JSONEq(t, `{"api_base_url":"`+fake.URL+`"}`, string(a.Settings), "install parameters are not account settings")
	accts, pending := b.counts(t)
	require.Equal(t, 1, accts)
	require.Zero(t, pending, "the pending install is consumed")

	out, err := b.resolver().Outbound(context.Background(), b.tenant, res.AccountID)
	require.NoError(t, err)
	_, err = out.Outbound.Send(context.Background(), &channels.OutboundMessage{ConversationID: "C1", Text: "hello"})
	require.NoError(t, err)
	require.Equal(t, 1, fake.Sent())

	// The same workspace again: the account is updated, not duplicated.
	fake.Code = "slack-code-2"
	_, q = b.begin(t, slackBegin(fake))
	again, err := b.svc.Complete(context.Background(), "slack", url.Values{"code": {"slack-code-2"}, "state": {q.Get("state")}})
	require.NoError(t, err)
	require.False(t, again.Created)
	require.Equal(t, res.AccountID, again.AccountID)
	_, creds, _ = b.account(t, res.AccountID)
	require.Equal(t, map[string]string{"bot_token": "xoxb-static-2"}, creds)
	accts, _ = b.counts(t)
	require.Equal(t, 1, accts)
}

// TestInstallSlackWithTokenRotation: an app with token rotation installs
// an account holding the refresh-token grant, which MIO renews.
func TestInstallSlackWithTokenRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := channelstest.NewFakeSlack(t, true, time.Hour, b.clock.Now)
	_, q := b.begin(t, slackBegin(fake))
	res, err := b.svc.Complete(context.Background(), "slack", url.Values{"code": {fake.Code}, "state": {q.Get("state")}})
	require.NoError(t, err)
	_, creds, _ := b.account(t, res.AccountID)
	require.Equal(t, map[string]string{"client_id": fake.ClientID, "client_secret": fake.ClientSecret,
		"refresh_token": "xoxe-1-refresh-1"}, creds)
	out, err := b.resolver().Outbound(context.Background(), b.tenant, res.AccountID)
	require.NoError(t, err)
	_, err = out.Outbound.Send(context.Background(), &channels.OutboundMessage{ConversationID: "C1", Text: "hello"})
	require.NoError(t, err)
	require.Equal(t, 1, fake.Sent())
	require.Equal(t, 2, fake.TokenRequests(), "the code, then the first renewal")
}

// TestInstallDiscord: bot authorization with the bot and
// applications.commands scopes and the permissions asked; the guild of
// the code exchange is the account's external id; the bot token is the
// app's.
func TestInstallDiscord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		id, secret, _ := r.BasicAuth()
		_ = r.ParseForm()
		if r.URL.Path != "/oauth2/token" || id != "99887766" || secret != "discord-secret" ||
			r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("code") != "discord-code" ||
			r.PostForm.Get("redirect_uri") != publicURL+"/install/discord/callback" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"user-token","token_type":"Bearer","expires_in":604800,"refresh_token":"r","scope":"bot applications.commands","guild":{"id":"123456789012345678","name":"Guild"}}`))
	}))
	t.Cleanup(srv.Close)
	page, q := b.begin(t, install.BeginParams{ChannelType: "discord",
		Credentials:   json.RawMessage(`{"client_id":"99887766","client_secret":"discord-secret","bot_token":"bot.token.x"}`),
		Settings:      json.RawMessage(`{"api_base_url":"` + srv.URL + `","permissions":"2048"}`),
		WebhookSecret: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
	require.Equal(t, "https://discord.com/oauth2/authorize", page)
	require.Equal(t, "99887766", q.Get("client_id"))
	require.Equal(t, "bot applications.commands", q.Get("scope"))
	require.Equal(t, "2048", q.Get("permissions"))
	require.Equal(t, "code", q.Get("response_type"))

	res, err := b.svc.Complete(context.Background(), "discord", url.Values{"code": {"discord-code"},
		"guild_id": {"123456789012345678"}, "permissions": {"2048"}, "state": {q.Get("state")}})
	require.NoError(t, err)
	require.EqualValues(t, 1, calls.Load())
	a, creds, _ := b.account(t, res.AccountID)
	require.Equal(t, "123456789012345678", a.ExternalID)
	require.Equal(t, map[string]string{"bot_token": "bot.token.x"}, creds)
	require.JSONEq(t, `{"api_base_url":"`+srv.URL+`","application_id":"99887766"}`, string(a.Settings))
}

// TestInstallZohoCliq: the consent page asks for offline access on the
// app's data centre; the callback exchanges the code at the accounts
// server it names for a refresh token, and the account holds the
// refresh-token grant, which sends through the fake.
func TestInstallZohoCliq(t *testing.T) {
	t.Parallel()
	b := setup(t)
	z := channelstest.NewFakeZoho(t, time.Hour)
	page, q := b.begin(t, install.BeginParams{ChannelType: "zoho_cliq", DisplayName: "Cliq",
		Credentials:   json.RawMessage(`{"client_id":"` + z.ClientID + `","client_secret":"` + z.ClientSecret + `"}`),
		Settings:      json.RawMessage(`{"accounts_server":"` + z.URL + `","api_base_url":"` + z.URL + `"}`),
		WebhookSecret: "cliq-shared-token"})
	require.Equal(t, z.URL+"/oauth/v2/auth", page)
	require.Equal(t, "offline", q.Get("access_type"))
	require.Equal(t, "consent", q.Get("prompt"))
	require.Equal(t, "code", q.Get("response_type"))
	require.Equal(t, zohocliq.DefaultInstallScopes, q.Get("scope"))

	res, err := b.svc.Complete(context.Background(), "zoho_cliq", url.Values{"code": {z.Code}, "location": {"us"},
		"accounts-server": {z.URL}, "state": {q.Get("state")}})
	require.NoError(t, err)
	_, creds, _ := b.account(t, res.AccountID)
	require.Equal(t, map[string]string{"client_id": z.ClientID, "client_secret": z.ClientSecret,
		"refresh_token": z.RefreshToken, "accounts_server": z.URL}, creds)
	out, err := b.resolver().Outbound(context.Background(), b.tenant, res.AccountID)
	require.NoError(t, err)
	_, err = out.Outbound.Send(context.Background(), &channels.OutboundMessage{ConversationID: "chat-1", Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, 1, z.Sent())
}

// TestInstallZohoAccountsServerChecked: a redirect naming an accounts
// server that is not Zoho's gets no code and no client secret.
func TestInstallZohoAccountsServerChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	z := channelstest.NewFakeZoho(t, time.Hour)
	_, q := b.begin(t, install.BeginParams{ChannelType: "zoho_cliq",
		Credentials: json.RawMessage(`{"client_id":"` + z.ClientID + `","client_secret":"` + z.ClientSecret + `"}`),
		Settings:    json.RawMessage(`{"accounts_server":"` + z.URL + `"}`), WebhookSecret: "t"})
	var evilCalls atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		evilCalls.Add(1)
		_, _ = w.Write([]byte(`{"refresh_token":"stolen"}`))
	}))
	t.Cleanup(evil.Close)
	_, err := b.svc.Complete(context.Background(), "zoho_cliq", url.Values{"code": {z.Code},
		"accounts-server": {evil.URL}, "state": {q.Get("state")}})
	require.Error(t, err)
	require.Zero(t, evilCalls.Load(), "the client secret went to the redirect's host")
	require.Zero(t, z.TokenRequests())
	accts, pending := b.counts(t)
	require.Zero(t, accts)
	require.EqualValues(t, 1, pending, "the install can still complete")
}

// TestInstallTeams: the admin consent page for the bot's app; the
// callback's tenant becomes the account's tenant_id.
func TestInstallTeams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	appID := "00000000-0000-0000-0000-0000000000aa"
	page, q := b.begin(t, install.BeginParams{ChannelType: "teams",
		Credentials: json.RawMessage(`{"client_id":"` + appID + `","client_secret":"teams-secret"}`)})
	require.Equal(t, "https://login.microsoftonline.com/organizations/adminconsent", page)
	require.Equal(t, appID, q.Get("client_id"))

	res, err := b.svc.Complete(context.Background(), "teams", url.Values{"admin_consent": {"True"},
		"tenant": {"11111111-2222-3333-4444-555555555555"}, "state": {q.Get("state")}})
	require.NoError(t, err)
	a, creds, _ := b.account(t, res.AccountID)
	require.Equal(t, appID, a.ExternalID)
	require.Equal(t, map[string]string{"app_id": appID, "client_secret": "teams-secret",
		"tenant_id": "11111111-2222-3333-4444-555555555555"}, creds)
}

// TestInstallStateRefused: a forged state, an expired one, one used
// already and one begun for another channel are refused before any code
// is exchanged, and nothing is written.
func TestInstallStateRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	_, q := b.begin(t, slackBegin(fake))
	state := q.Get("state")

	other := setup(t) // another master key signs other states
	_, forgedQ := other.begin(t, slackBegin(fake))
	tampered := []byte(state)
	tampered[5] ^= 1
	for name, s := range map[string]string{
		"Forged":    forgedQ.Get("state"),
		"Tampered":  string(tampered),
		"Empty":     "",
		"Garbage":   "not-a-state",
		"NoMAC":     state[:len(state)-44],
		"Truncated": state[:20],
	} {
		_, err := b.svc.Complete(context.Background(), "slack", url.Values{"code": {fake.Code}, "state": {s}})
		require.ErrorIs(t, err, install.ErrState, name)
	}
	_, err := b.svc.Complete(context.Background(), "discord", url.Values{"code": {fake.Code}, "state": {state}})
	require.ErrorIs(t, err, install.ErrState, "another channel's callback")
	require.Zero(t, fake.TokenRequests())
	accts, pending := b.counts(t)
	require.Zero(t, accts)
	require.EqualValues(t, 1, pending)

	// Used once, the state is spent.
	_, err = b.svc.Complete(context.Background(), "slack", url.Values{"code": {fake.Code}, "state": {state}})
	require.NoError(t, err)
	require.Equal(t, 1, fake.TokenRequests())
	_, err = b.svc.Complete(context.Background(), "slack", url.Values{"code": {"slack-code"}, "state": {state}})
	require.ErrorIs(t, err, install.ErrState, "replayed")
	require.Equal(t, 1, fake.TokenRequests(), "no exchange for a replay")
	accts, pending = b.counts(t)
	require.Equal(t, 1, accts)
	require.Zero(t, pending)

	// Expired: ten minutes later the state is refused.
	fake.Code = "slack-code-3"
	_, q = b.begin(t, slackBegin(fake))
	b.clock.Add(install.StateTTL)
	_, err = b.svc.Complete(context.Background(), "slack", url.Values{"code": {"slack-code-3"}, "state": {q.Get("state")}})
	require.ErrorIs(t, err, install.ErrState, "expired")
	require.Equal(t, 1, fake.TokenRequests())
	accts, _ = b.counts(t)
	require.Equal(t, 1, accts)
}

// TestInstallReplayRace: the same callback twice at once (a double
// click, a replay racing the original) exchanges the code once.
func TestInstallReplayRace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	_, q := b.begin(t, slackBegin(fake))
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.svc.Complete(context.Background(), "slack", url.Values{"code": {fake.Code}, "state": {q.Get("state")}})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, install.ErrState)
		}
	}
	require.Equal(t, 1, ok)
	require.Equal(t, 1, fake.TokenRequests())
}

// TestInstallRefusedConsent: a redirect carrying the platform's error
// exchanges nothing and creates nothing.
func TestInstallRefusedConsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := channelstest.NewFakeSlack(t, false, 0, nil)
	_, q := b.begin(t, slackBegin(fake))
	_, err := b.svc.Complete(context.Background(), "slack", url.Values{"error": {"access_denied"}, "state": {q.Get("state")}})
	var refused *channels.InstallRefusedError
	require.True(t, errors.As(err, &refused))
	require.Equal(t, "access_denied", refused.Reason)
	require.Zero(t, fake.TokenRequests())
	accts, _ := b.counts(t)
	require.Zero(t, accts)
}

// TestInstallBeginRefusesBadInput: an unknown or non-installable channel,
// an app without its client, a Slack install without its signing secret.
func TestInstallBeginRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, p := range map[string]install.BeginParams{
		"Telegram":        {ChannelType: "telegram", Credentials: json.RawMessage(`{"client_id":"a","client_secret":"b"}`)},
		"NoClientSecret":  {ChannelType: "slack", Credentials: json.RawMessage(`{"client_id":"a"}`), WebhookSecret: "s"},
		"NoSigningSecret": {ChannelType: "slack", Credentials: json.RawMessage(`{"client_id":"a","client_secret":"b"}`)},
		"DiscordNoBot":    {ChannelType: "discord", Credentials: json.RawMessage(`{"client_id":"1","client_secret":"b"}`)},
	} {
		p.TenantID = b.tenant
		_, err := b.svc.Begin(context.Background(), p)
		require.True(t, errors.Is(err, install.ErrInvalid) || errors.Is(err, install.ErrNotInstallable), "%s: %v", name, err)
	}
	_, pending := b.counts(t)
	require.Zero(t, pending)
}
