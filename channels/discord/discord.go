// Package discord is MIO's adapter for Discord's HTTP interactions endpoint.
//
// Over HTTP Discord delivers interactions only (slash commands, message
// components, modal submissions, autocomplete and the PING handshake);
// ordinary channel messages arrive over the Gateway websocket, which this
// adapter does not speak. Every request is signed with Ed25519 over
// X-Signature-Timestamp + raw body using the application's public key.
// Interactions that MIO stores are acknowledged with a deferred response
// (type 5 or 6) that the HTTP layer sends after commit; the agent's answer
// is sent later as a follow-up.
package discord

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// DefaultAPIBaseURL is the Discord REST API base used when Options.APIBaseURL
// is empty.
const DefaultAPIBaseURL = "https://discord.com/api/v10"

// DefaultTimestampTolerance is how far X-Signature-Timestamp may be from the
// request time before a request is rejected as stale.
const DefaultTimestampTolerance = 5 * time.Minute

// Options holds the adapter's injectable dependencies. The zero value is
// ready to use.
type Options struct {
	// APIBaseURL is the Discord REST API base. Default DefaultAPIBaseURL.
	APIBaseURL string
	// APIBasePolicy validates the accounts' api_base_url settings (a REST
	// proxy shared by processes, a local fake). Default: https only.
	APIBasePolicy channels.APIBasePolicy
	// HTTPClient calls the Discord API. Default http.DefaultClient.
	HTTPClient *http.Client
	// Source tunes the Gateway source (RunSource).
	Source SourceConfig
	// Now is the clock used when a Request carries no Now. Default time.Now.
	Now func() time.Time
	// TimestampTolerance bounds the age (and future skew) of a signed
	// request. Default DefaultTimestampTolerance.
	TimestampTolerance time.Duration
}

// Channel is the Discord adapter.
type Channel struct {
	opts Options
}

var (
	_ channels.Channel         = (*Channel)(nil)
	_ channels.OutboundChannel = (*Channel)(nil)
	_ channels.Source          = (*Channel)(nil)
)

// New returns a Discord adapter, applying defaults to zero options.
func New(opts Options) *Channel {
	if opts.APIBaseURL == "" {
		opts.APIBaseURL = DefaultAPIBaseURL
	}
	opts.APIBaseURL = strings.TrimRight(opts.APIBaseURL, "/")
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TimestampTolerance <= 0 {
		opts.TimestampTolerance = DefaultTimestampTolerance
	}
	return &Channel{opts: opts}
}

// Type returns envelope.ChannelDiscord.
func (c *Channel) Type() string { return envelope.ChannelDiscord }

// Info describes Discord: embeds and buttons, the Gateway as an inbound
// source. Threads are channels of their own on Discord, so they appear as
// conversations rather than as thread ids. 5 messages per 5 s per channel;
// history reads 1 call/s with a burst of 5, well inside the bot's 50 req/s.
func (c *Channel) Info() channels.Info {
	return channels.Info{
		DisplayName:  "Discord",
		Outbound:     (*outbound)(nil),
		RichContent:  true,
		Interactions: true,
		RateLimits:   []channels.RateLimit{{Scope: channels.ScopeConversation, PerSec: 1, Burst: 5}},
		// 5 calls per 5 s per channel.
		StreamEditInterval: time.Second,
		HistoryRateLimit:   channels.RateLimit{Scope: channels.ScopeAccount, PerSec: 1, Burst: 5},
		Settings: []channels.Field{
			{Name: "application_id", Type: channels.TypeString, Description: "The application's id (a snowflake): the bot's own messages are left out, and follow-ups are sent with it."},
			{Name: "gateway", Type: channels.TypeBoolean, Description: "false turns the Gateway connection off. Default on when credentials carry a bot_token."},
			{Name: "gateway_intents", Type: channels.TypeInteger, Description: "The Gateway intents bit set. Default GUILD_MESSAGES, GUILD_MESSAGE_REACTIONS, DIRECT_MESSAGES, DIRECT_MESSAGE_REACTIONS and MESSAGE_CONTENT (privileged: enable it in the Developer Portal)."},
			{Name: "gateway_url", Type: channels.TypeString, Description: "The Gateway URL (ws:// or wss://). Default " + DefaultGatewayURL + "."},
			channels.APIBaseURLField(DefaultAPIBaseURL),
		},
		Credentials: []channels.Field{
			{Name: "bot_token", Type: channels.TypeString, Required: true, Secret: true,
				Description: "The bot token: sends, history reads and the Gateway session."},
		},
		Setup: channels.Setup{
			CredentialsExample: `{"bot_token":"…"}`,
			SecretLabel:        "Application public key (hex, General Information)",
			Steps: []string{
				"In the Discord developer portal, General Information: paste the URL below as the Interactions Endpoint URL (Discord sends a signed PING).",
				"Bot: copy the bot token into the credentials.",
			}},
	}
}

// Config is one Discord account's configuration.
//
// Webhook secret: the application's Ed25519 public key as 64 hex characters
// (Developer Portal, "Public Key"). Required for the interactions webhook;
// an account that uses the Gateway only (credentials bot_token, settings
// gateway not false) may leave it out, and its interactions endpoint then
// refuses every request.
//
// Settings (plain JSON, optional):
//   - "application_id": the application's snowflake id (used to send
//     follow-up messages).
//
// Credentials (decrypted JSON, optional for inbound):
//   - "bot_token": the bot token used for outbound REST calls; required to
//     send (the bot needs Send Messages in the target channel).
type Config struct {
	ApplicationID string `json:"application_id"`
	BotToken      string `json:"bot_token"`
	// PublicKey is decoded from the account's webhook secret; nil for a
	// Gateway-only account.
	PublicKey ed25519.PublicKey `json:"-"`
}

type settingsJSON struct {
	ApplicationID string `json:"application_id"`
}

type credentialsJSON struct {
	BotToken string `json:"bot_token"`
}

// ParseConfig decodes and validates an account's configuration. Errors wrap
// channels.ErrInvalidConfig.
func ParseConfig(acct channels.Account) (Config, error) {
	var cfg Config
	var s settingsJSON
	if err := channels.DecodeObject("discord settings", acct.Settings, &s); err != nil {
		return cfg, err
	}
	var cr credentialsJSON
	if err := channels.DecodeObject("discord credentials", acct.Credentials, &cr); err != nil {
		return cfg, err
	}
	if s.ApplicationID != "" {
		if _, ok := parseSnowflake(s.ApplicationID); !ok {
			return cfg, fmt.Errorf("%w: discord settings: application_id %q is not a snowflake", channels.ErrInvalidConfig, s.ApplicationID)
		}
	}
	cfg.ApplicationID = s.ApplicationID
	cfg.BotToken = cr.BotToken
	secret := strings.TrimSpace(acct.WebhookSecret)
	if secret == "" {
		// Gateway only: no interactions endpoint, so no key to check.
		if _, err := ParseGatewayConfig(acct); err != nil {
			return cfg, fmt.Errorf("%w: discord webhook secret (application public key) is required unless the account "+
				"uses the Gateway only (credentials bot_token, settings gateway not false)", channels.ErrInvalidConfig)
		}
		return cfg, nil
	}
	key, err := hex.DecodeString(secret)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return cfg, fmt.Errorf("%w: discord webhook secret must be the %d-byte application public key in hex", channels.ErrInvalidConfig, ed25519.PublicKeySize)
	}
	cfg.PublicKey = ed25519.PublicKey(key)
	return cfg, nil
}

// NewInbound validates the account's configuration and returns its
// interactions handler.
func (c *Channel) NewInbound(acct channels.Account) (channels.Inbound, error) {
	cfg, err := ParseConfig(acct)
	if err != nil {
		return nil, err
	}
	if _, err := c.AccountAPIBase(acct); err != nil {
		return nil, err
	}
	return &inbound{cfg: cfg, opts: c.opts}, nil
}

// NewOutbound validates the account's configuration for sending and
// returns its sender, which also edits (channels.Editor).
func (c *Channel) NewOutbound(acct channels.Account) (channels.Outbound, error) {
	cfg, err := ParseOutboundConfig(acct)
	if err != nil {
		return nil, err
	}
	base, err := c.AccountAPIBase(acct)
	if err != nil {
		return nil, err
	}
	return &outbound{apiBase: base, client: c.opts.HTTPClient, token: cfg.BotToken}, nil
}

// AccountAPIBase is the account's REST base: settings api_base_url
// (checked by Options.APIBasePolicy), else Options.APIBaseURL.
func (c *Channel) AccountAPIBase(acct channels.Account) (string, error) {
	return c.opts.APIBasePolicy.AccountAPIBase("discord", acct.Settings, c.opts.APIBaseURL)
}

// ParseOutboundConfig decodes an account's configuration for sending: it
// requires credentials bot_token and ignores the inbound public key.
// Errors wrap channels.ErrInvalidConfig.
func ParseOutboundConfig(acct channels.Account) (Config, error) {
	var s settingsJSON
	if err := channels.DecodeObject("discord settings", acct.Settings, &s); err != nil {
		return Config{}, err
	}
	var cr credentialsJSON
	if err := channels.DecodeObject("discord credentials", acct.Credentials, &cr); err != nil {
		return Config{}, err
	}
	switch {
	case cr.BotToken == "":
		return Config{}, fmt.Errorf("%w: discord: credentials bot_token is required to send", channels.ErrInvalidConfig)
	case channels.HasSpaceOrControl(cr.BotToken):
		return Config{}, fmt.Errorf("%w: discord: bot_token contains whitespace or control characters", channels.ErrInvalidConfig)
	}
	return Config{ApplicationID: s.ApplicationID, BotToken: cr.BotToken}, nil
}
