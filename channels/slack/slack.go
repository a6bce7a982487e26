// Package slack is MIO's Slack adapter. Inbound it receives the Events API:
// it verifies Slack's v0 request signature, answers the url_verification
// handshake and turns message events (plain, file shares, bot messages,
// edits and deletes) into canonical envelopes, resolving sender display
// names through users.info when the account has a bot token.
package slack

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Defaults for Options.
const (
	DefaultAPIBaseURL    = "https://slack.com/api"
	DefaultLookupTimeout = 300 * time.Millisecond
	DefaultNameCacheSize = 10000
	DefaultNameCacheTTL  = time.Hour
)

// Options configures the Slack channel. The zero value is ready to use.
type Options struct {
	// APIBaseURL is the Slack Web API base URL. Default
	// DefaultAPIBaseURL; tests point it at an httptest server.
	APIBaseURL string
	// APIBasePolicy validates the accounts' api_base_url settings.
	// Default: https only.
	APIBasePolicy channels.APIBasePolicy
	// HTTPClient calls the Web API. Default: a client with a 10 s timeout.
	HTTPClient *http.Client
	// Logger receives debug records about failed display name lookups.
	// Default: records are discarded.
	Logger *slog.Logger
	// LookupTimeout bounds one users.info call made while parsing a
	// webhook; on timeout the display name is left empty. Default
	// DefaultLookupTimeout.
	LookupTimeout time.Duration
	// NameCacheSize bounds the number of cached display names (least
	// recently used entries are evicted). Default DefaultNameCacheSize.
	NameCacheSize int
	// NameCacheTTL is how long a resolved display name is reused. Default
	// DefaultNameCacheTTL. Failed lookups Slack answered with ok:false are
	// remembered for min(NameCacheTTL, 5 min) so a bad user id does not
	// cost a call per message.
	NameCacheTTL time.Duration
	// Now is the clock used for cache expiry. Default time.Now.
	Now func() time.Time
}

// Channel is the Slack adapter. One Channel serves every Slack account; its
// display name cache is shared across them.
type Channel struct {
	apiBase       string
	basePolicy    channels.APIBasePolicy
	client        *http.Client
	logger        *slog.Logger
	lookupTimeout time.Duration
	names         *nameCache
}

// New returns a Slack channel with opts' defaults applied.
func New(opts Options) *Channel {
	if opts.APIBaseURL == "" {
		opts.APIBaseURL = DefaultAPIBaseURL
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LookupTimeout <= 0 {
		opts.LookupTimeout = DefaultLookupTimeout
	}
	if opts.NameCacheSize <= 0 {
		opts.NameCacheSize = DefaultNameCacheSize
	}
	if opts.NameCacheTTL <= 0 {
		opts.NameCacheTTL = DefaultNameCacheTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Channel{
		apiBase:       strings.TrimRight(opts.APIBaseURL, "/"),
		basePolicy:    opts.APIBasePolicy,
		client:        opts.HTTPClient,
		logger:        opts.Logger,
		lookupTimeout: opts.LookupTimeout,
		names:         newNameCache(opts.NameCacheSize, opts.NameCacheTTL, opts.Now),
	}
}

// Type returns envelope.ChannelSlack.
func (c *Channel) Type() string { return envelope.ChannelSlack }

// Info describes Slack: threads and rich content (Block Kit), no
// delivery receipts; 1 message/s per channel.
func (c *Channel) Info() channels.Info {
	return channels.Info{
		DisplayName: "Slack",
		Outbound:    (*outbound)(nil),
		Threads:     true, RichContent: true, Interactions: true,
		RateLimits: []channels.RateLimit{{Scope: channels.ScopeConversation, PerSec: 1, Burst: 3}},
		// chat.update is Tier 3 (50+ calls a minute).
		StreamEditInterval: 1200 * time.Millisecond,
		Settings:           []channels.Field{channels.APIBaseURLField(DefaultAPIBaseURL)},
		Credentials: []channels.Field{
			{Name: "bot_token", Type: channels.TypeString, Required: true, Secret: true,
				Description: "The bot user OAuth token (xoxb-): sends and edits (chat:write), sender names (users:read), history (*:history). With token rotation, give the refresh-token grant below instead."},
			{Name: "client_id", Type: channels.TypeString, Secret: true, Description: "Token rotation: the app's client id."},
			{Name: "client_secret", Type: channels.TypeString, Secret: true, Description: "Token rotation: the app's client secret."},
			{Name: "refresh_token", Type: channels.TypeString, Secret: true, Description: "Token rotation: the refresh token of the install (xoxe-1-…); MIO renews the expiring bot tokens and keeps each refresh token Slack rotates in."},
		},
		Setup: channels.Setup{
			CredentialsExample: `{"bot_token":"xoxb-…"}`,
			SecretLabel:        "Signing secret (Basic Information → App Credentials)",
			Steps: []string{
				"In the Slack app's settings open Event Subscriptions, enable events and paste the URL below as the Request URL (Slack verifies it at once).",
				"Subscribe to the bot events message.channels, message.im (and others you need).",
				"Install the app to the workspace; its Bot User OAuth Token is the bot_token.",
			}},
	}
}

var _ channels.OutboundChannel = (*Channel)(nil)

// NewInbound validates acct's configuration and returns its webhook handler.
func (c *Channel) NewInbound(acct channels.Account) (channels.Inbound, error) {
	cfg, err := c.newConfig(acct)
	if err != nil {
		return nil, err
	}
	if cfg.APIBaseURL, err = c.accountAPIBase(acct); err != nil {
		return nil, err
	}
	return &inbound{ch: c, cfg: cfg, accountID: acct.ID.String()}, nil
}

// Config is one Slack account's configuration, decoded from the account:
//
//   - webhook secret (Account.WebhookSecret): the Slack app's signing
//     secret, used to verify X-Slack-Signature. Required.
//   - credentials JSON: {"bot_token": "xoxb-..."}. Optional for inbound;
//     with a bot token, sender display names are resolved through
//     users.info (the token needs the users:read scope). Required to send
//     (chat.postMessage and chat.update need chat:write). Other keys are
//     ignored.
//   - settings JSON: {"api_base_url": "https://slack.com/api"} (optional;
//     e.g. GovSlack's https://slack-gov.com/api or a local fake), checked
//     by Options.APIBasePolicy; other keys are ignored.
type Config struct {
	// APIBaseURL is the account's Web API base (settings api_base_url,
	// default Options.APIBaseURL): sends, edits, users.info, files.
	APIBaseURL string `json:"-"`
	// SigningSecret is the app's signing secret (the webhook secret).
	SigningSecret string `json:"-"`
	// BotToken is the bot user OAuth token. Without it or a grant, sender
	// names are not looked up.
	BotToken string `json:"bot_token"`
	// Tokens gives the token calls are made with: BotToken, or the
	// renewed tokens of a refresh-token grant (token rotation).
	Tokens channels.TokenSource `json:"-"`
	// Renewed: Tokens come from a grant, and a token_expired answer
	// renews the token once.
	Renewed bool `json:"-"`
}

// newConfig decodes and validates acct into a Config.
func (c *Channel) newConfig(acct channels.Account) (Config, error) {
	var cfg Config
	if err := channels.DecodeObject("slack settings", acct.Settings, &struct{}{}); err != nil {
		return Config{}, err
	}
	if err := channels.DecodeObject("slack credentials", acct.Credentials, &cfg); err != nil {
		return Config{}, err
	}
	cfg.SigningSecret = acct.WebhookSecret
	switch {
	case cfg.SigningSecret == "":
		return Config{}, fmt.Errorf("%w: slack: the signing secret (webhook secret) is required", channels.ErrInvalidConfig)
	case strings.TrimSpace(cfg.SigningSecret) != cfg.SigningSecret:
		return Config{}, fmt.Errorf("%w: slack: the signing secret has leading or trailing whitespace", channels.ErrInvalidConfig)
	case channels.HasSpaceOrControl(cfg.BotToken):
		return Config{}, fmt.Errorf("%w: slack: bot_token contains whitespace or control characters", channels.ErrInvalidConfig)
	}
	g, err := c.Grant(acct)
	switch {
	case err != nil:
		return Config{}, err
	case g != nil && acct.Tokens != nil:
		cfg.Tokens, cfg.Renewed = acct.Tokens, true
	case cfg.BotToken != "":
		cfg.Tokens = staticTokens(cfg.BotToken)
	}
	return cfg, nil
}

// NewOutbound validates acct's configuration for sending and returns its
// sender; the sender also edits (channels.Editor). Only the credentials
// are needed (a bot_token, or a rotating refresh-token grant whose tokens
// acct.Tokens gives): the signing secret is an inbound concern.
func (c *Channel) NewOutbound(acct channels.Account) (channels.Outbound, error) {
	cfg, err := c.newOutboundConfig(acct)
	if err != nil {
		return nil, err
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, err
	}
	return &outbound{apiBase: base, client: c.client, tokens: cfg.Tokens, renewed: cfg.Renewed}, nil
}

// accountAPIBase is acct's settings api_base_url, else Options.APIBaseURL.
func (c *Channel) accountAPIBase(acct channels.Account) (string, error) {
	return c.basePolicy.AccountAPIBase("slack", acct.Settings, c.apiBase)
}

// newOutboundConfig decodes acct into a Config for sending: it requires a
// bot token or a refresh-token grant (with acct.Tokens) and ignores the
// signing secret.
func (c *Channel) newOutboundConfig(acct channels.Account) (Config, error) {
	var cfg Config
	if err := channels.DecodeObject("slack settings", acct.Settings, &struct{}{}); err != nil {
		return Config{}, err
	}
	if err := channels.DecodeObject("slack credentials", acct.Credentials, &cfg); err != nil {
		return Config{}, err
	}
	g, err := c.Grant(acct)
	switch {
	case err != nil:
		return Config{}, err
	case g != nil && acct.Tokens == nil:
		return Config{}, fmt.Errorf("%w: slack: credentials hold a refresh-token grant but no token renewal is configured", channels.ErrInvalidConfig)
	case g != nil:
		cfg.Tokens, cfg.Renewed = acct.Tokens, true
		return cfg, nil
	case cfg.BotToken == "":
		return Config{}, fmt.Errorf("%w: slack: credentials bot_token is required to send", channels.ErrInvalidConfig)
	case channels.HasSpaceOrControl(cfg.BotToken):
		return Config{}, fmt.Errorf("%w: slack: bot_token contains whitespace or control characters", channels.ErrInvalidConfig)
	}
	cfg.Tokens = staticTokens(cfg.BotToken)
	return cfg, nil
}
