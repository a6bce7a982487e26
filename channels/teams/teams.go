// Package teams is MIO's adapter for Microsoft Teams bots registered with
// the Azure Bot Service (the Bot Framework).
//
// Teams posts activities (message, messageUpdate, messageDelete,
// conversationUpdate) to the account's webhook, each with a Bot Framework
// JWT in "Authorization: Bearer": RS256, signed with a key from the Bot
// Framework's OpenID metadata whose endorsements include the activity's
// channelId, issued by https://api.botframework.com for the bot's app id,
// its serviceurl claim equal to the activity's serviceUrl. MIO answers
// through the Bot Connector REST API with tokens it obtains by the
// client-credentials grant (Grant) and renews through the account's
// channels.TokenSource.
package teams

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Production endpoints, the defaults of the account settings.
const (
	// DefaultAPIBaseURL is Microsoft's global Teams service URL, which
	// reaches every public-cloud conversation.
	DefaultAPIBaseURL = "https://smba.trafficmanager.net/teams"
	// DefaultTokenURL is the Bot Framework's (multi-tenant) token
	// endpoint.
	DefaultTokenURL = "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token"
	// DefaultOpenIDMetadataURL names the keys Bot Framework tokens are
	// signed with.
	DefaultOpenIDMetadataURL = "https://login.botframework.com/v1/.well-known/openidconfiguration"
	// Issuer is the iss of every Bot Framework token sent to a bot.
	Issuer = "https://api.botframework.com"
	// TokenScope is the scope of the tokens MIO sends with.
	TokenScope = "https://api.botframework.com/.default"
	// ChannelIDTeams is the channelId of Teams activities.
	ChannelIDTeams = "msteams"
)

// Options holds the adapter's injectable dependencies. The zero value is
// ready to use.
type Options struct {
	// APIBaseURL is the service URL of accounts whose settings name none.
	// Default DefaultAPIBaseURL.
	APIBaseURL string
	// APIBasePolicy validates the accounts' URL settings (api_base_url,
	// token_url, openid_metadata_url). Default: https only.
	APIBasePolicy channels.APIBasePolicy
	// HTTPClient calls the Bot Connector, the token endpoint and the key
	// discovery. Default http.DefaultClient.
	HTTPClient *http.Client
	// KeyRefreshInterval is the least time between two fetches of one
	// metadata URL's keys for a token naming an unknown kid. Default
	// DefaultKeyRefreshInterval.
	KeyRefreshInterval time.Duration
	// KeyMaxAge is how long fetched keys are used before they are
	// fetched again. Default DefaultKeyMaxAge.
	KeyMaxAge time.Duration
	// ServiceURLs keeps conversations' service URLs beyond the process.
	// Default none: each process remembers those of the activities it
	// received.
	ServiceURLs ServiceURLStore
}

// Channel is the Microsoft Teams adapter.
type Channel struct {
	opts     Options
	keys     *keyCache
	services *serviceURLs
}

var (
	_ channels.Channel         = (*Channel)(nil)
	_ channels.OutboundChannel = (*Channel)(nil)
)

// New returns a Teams adapter, applying defaults to zero options.
func New(opts Options) *Channel {
	if opts.APIBaseURL == "" {
		opts.APIBaseURL = DefaultAPIBaseURL
	}
	opts.APIBaseURL = strings.TrimRight(opts.APIBaseURL, "/")
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.KeyRefreshInterval <= 0 {
		opts.KeyRefreshInterval = DefaultKeyRefreshInterval
	}
	if opts.KeyMaxAge <= 0 {
		opts.KeyMaxAge = DefaultKeyMaxAge
	}
	return &Channel{opts: opts, keys: newKeyCache(opts.HTTPClient, opts.KeyRefreshInterval, opts.KeyMaxAge), services: newServiceURLs(opts.ServiceURLs)}
}

// Type returns envelope.ChannelTeams.
func (c *Channel) Type() string { return envelope.ChannelTeams }

// Info describes Teams: threads, Adaptive Cards, edits, deletes and
// typing. Teams limits each bot per conversation (7 messages in 1 s, 8 in
// 2 s, 60 in 30 s, 1800 in an hour); the default bucket is the 30-second
// one, 2 messages/s, with a burst of 6 so that 2 seconds never exceed 8.
func (c *Channel) Info() channels.Info {
	return channels.Info{
		DisplayName:        "Microsoft Teams",
		Outbound:           (*outbound)(nil),
		Threads:            true,
		RichContent:        true,
		Interactions:       true,
		RateLimits:         []channels.RateLimit{{Scope: channels.ScopeConversation, PerSec: 2, Burst: 6}},
		StreamEditInterval: time.Second,
		Settings: []channels.Field{
			channels.APIBaseURLField(DefaultAPIBaseURL),
			{Name: "token_url", Type: channels.TypeString, Description: "The OAuth token endpoint of the client-credentials grant. Default " + DefaultTokenURL + " (with tenant_id: that tenant's endpoint)."},
			{Name: "openid_metadata_url", Type: channels.TypeString, Description: "The OpenID metadata naming the keys inbound tokens are signed with. Default " + DefaultOpenIDMetadataURL + "."},
		},
		Credentials: []channels.Field{
			{Name: "app_id", Type: channels.TypeString, Required: true, Secret: true, Description: "The bot's Microsoft App ID (the audience of inbound tokens; the account's external id)."},
			{Name: "client_secret", Type: channels.TypeString, Secret: true, Description: "A client secret of the app registration; required to send."},
			{Name: "tenant_id", Type: channels.TypeString, Secret: true, Description: "The tenant of a single-tenant bot; tokens come from its endpoint. Leave out for a multi-tenant bot."},
		},
		Setup: channels.Setup{
			CredentialsExample: `{"app_id":"00000000-0000-0000-0000-000000000000","client_secret":"…"}`,
			Steps: []string{
				"In the Azure portal, create an Azure Bot (or open the bot's app registration) and note its Microsoft App ID; add a client secret under Certificates & secrets.",
				"In the bot's Configuration, set the Messaging endpoint to the URL below.",
				"Under Channels, add Microsoft Teams; install the bot's Teams app in the teams and chats it should serve.",
			}},
	}
}

// Config is one Teams account's configuration.
//
// Settings (plain JSON, all optional):
//   - "api_base_url": the service URL MIO sends to when it knows no
//     serviceUrl of the conversation (see serviceURLs). Default
//     Options.APIBaseURL (DefaultAPIBaseURL). Its host is trusted as a
//     service URL too.
//   - "token_url": the token endpoint. Default DefaultTokenURL, or
//     https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token
//     when credentials name a tenant.
//   - "openid_metadata_url": Default DefaultOpenIDMetadataURL.
//
// Credentials (decrypted JSON): "app_id" (required: the audience of
// inbound tokens), "client_secret" (required to send) and "tenant_id"
// (single-tenant bots).
type Config struct {
	// APIBaseURL is the service URL sends go to, without a trailing slash.
	APIBaseURL string
	// AppID is the bot's Microsoft App ID.
	AppID string
	// ClientSecret is the app's client secret; empty when the account
	// only receives.
	ClientSecret string
	// OpenIDMetadataURL names the signing keys.
	OpenIDMetadataURL string
	// TenantID is the single tenant of the bot, empty for multi-tenant.
	TenantID string
	// TokenURL is the token endpoint of the client-credentials grant.
	TokenURL string
}

type settingsJSON struct {
	APIBaseURL        string `json:"api_base_url"`
	TokenURL          string `json:"token_url"`
	OpenIDMetadataURL string `json:"openid_metadata_url"`
}

type credentialsJSON struct {
	AppID        string `json:"app_id"`
	ClientSecret string `json:"client_secret"`
	TenantID     string `json:"tenant_id"`
}

// ParseConfig decodes and validates an account's configuration. Errors
// wrap channels.ErrInvalidConfig.
func (c *Channel) ParseConfig(acct channels.Account) (Config, error) {
	var s settingsJSON
	if err := channels.DecodeObject("teams settings", acct.Settings, &s); err != nil {
		return Config{}, err
	}
	var cr credentialsJSON
	if err := channels.DecodeObject("teams credentials", acct.Credentials, &cr); err != nil {
		return Config{}, err
	}
	cfg := Config{AppID: strings.TrimSpace(cr.AppID), ClientSecret: cr.ClientSecret, TenantID: strings.TrimSpace(cr.TenantID)}
	if cfg.AppID == "" {
		return Config{}, invalidf("credentials app_id is required (the bot's Microsoft App ID)")
	}
	if acct.ExternalID != "" && acct.ExternalID != cfg.AppID {
		return Config{}, invalidf("the external id must be the app id (credentials app_id)")
	}
	for _, f := range []struct{ name, value string }{{"app_id", cfg.AppID}, {"client_secret", cfg.ClientSecret}, {"tenant_id", cfg.TenantID}} {
		if channels.HasSpaceOrControl(f.value) {
			return Config{}, invalidf("credentials %s contains whitespace or control characters", f.name)
		}
	}
	if strings.ContainsAny(cfg.TenantID, "/?#%") {
		return Config{}, invalidf("credentials tenant_id %q is not a tenant id or domain", cfg.TenantID)
	}
	var err error
	if cfg.APIBaseURL, err = c.checkURL(channels.SettingAPIBaseURL, s.APIBaseURL, c.opts.APIBaseURL); err != nil {
		return Config{}, err
	}
	defToken := DefaultTokenURL
	if cfg.TenantID != "" {
		defToken = "https://login.microsoftonline.com/" + url.PathEscape(cfg.TenantID) + "/oauth2/v2.0/token"
	}
	if cfg.TokenURL, err = c.checkURL("token_url", s.TokenURL, defToken); err != nil {
		return Config{}, err
	}
	if cfg.OpenIDMetadataURL, err = c.checkURL("openid_metadata_url", s.OpenIDMetadataURL, DefaultOpenIDMetadataURL); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// checkURL is a URL setting checked by Options.APIBasePolicy, else def.
func (c *Channel) checkURL(name, raw, def string) (string, error) {
	if raw == "" {
		return strings.TrimRight(def, "/"), nil
	}
	return c.opts.APIBasePolicy.Check("teams settings "+name, raw)
}

// NewInbound validates the account's configuration and returns its
// webhook handler.
func (c *Channel) NewInbound(acct channels.Account) (channels.Inbound, error) {
	cfg, err := c.ParseConfig(acct)
	if err != nil {
		return nil, err
	}
	return &inbound{cfg: cfg, tenant: acct.TenantID, account: acct.ID, keys: c.keys, trusted: c.trustedHosts(cfg), services: c.services}, nil
}

// NewOutbound validates the account's configuration for sending (a
// client secret is required) and returns its sender.
func (c *Channel) NewOutbound(acct channels.Account) (channels.Outbound, error) {
	cfg, err := c.ParseConfig(acct)
	if err != nil {
		return nil, err
	}
	if cfg.ClientSecret == "" {
		return nil, invalidf("credentials client_secret is required to send")
	}
	tokens := acct.Tokens
	if tokens == nil {
		tokens = noTokens{}
	}
	return &outbound{apiBase: cfg.APIBaseURL, client: c.opts.HTTPClient, tokens: tokens,
		tenant: acct.TenantID, account: acct.ID, services: c.services, trusted: c.trustedHosts(cfg)}, nil
}

// noTokens is the TokenSource of a sender built without token renewal
// (an account's configuration only being validated): it sends nothing.
type noTokens struct{}

var errNoRenewal = errors.New("teams: no token renewal is configured for the account")

func (noTokens) Token(context.Context) (string, error) {
	return "", channels.Permanent(opSend, errNoRenewal)
}

func (noTokens) Renew(context.Context, string) (string, error) {
	return "", channels.Permanent(opSend, errNoRenewal)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: teams: %s", channels.ErrInvalidConfig, fmt.Sprintf(format, args...))
}
