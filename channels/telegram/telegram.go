// Package telegram is MIO's Telegram Bot API adapter. Inbound, Telegram
// POSTs one Update per request to the webhook set with setWebhook; the
// request carries the secret_token given there in the
// X-Telegram-Bot-Api-Secret-Token header (a static token, not a signature,
// with no timestamp). The adapter turns messages, edits, channel posts and
// callback queries into canonical envelopes deduplicated on update_id; file
// attachments are left pending with their file_id as the source reference
// (resolved later with getFile and the bot token).
package telegram

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// DefaultAPIBaseURL is the Bot API endpoint used when Options.APIBaseURL is
// empty.
const DefaultAPIBaseURL = "https://api.telegram.org"

// Options holds what the adapter needs from its environment. The zero value
// is ready to use.
type Options struct {
	// APIBaseURL is the Bot API base URL (file downloads and, later, sends).
	// Default DefaultAPIBaseURL; tests point it at a local fake.
	APIBaseURL string
	// APIBasePolicy validates the accounts' api_base_url settings.
	// Default: https only.
	APIBasePolicy channels.APIBasePolicy
	// HTTPClient makes Bot API calls. Default http.DefaultClient.
	HTTPClient *http.Client
	// Source tunes the long-polling source (RunSource).
	Source SourceConfig
}

// Channel is the Telegram adapter. It is safe for concurrent use.
type Channel struct {
	opts Options
}

var (
	_ channels.Channel         = (*Channel)(nil)
	_ channels.OutboundChannel = (*Channel)(nil)
	_ channels.Source          = (*Channel)(nil)
)

// New returns a Telegram adapter, applying defaults to opts.
func New(opts Options) *Channel {
	if opts.APIBaseURL == "" {
		opts.APIBaseURL = DefaultAPIBaseURL
	}
	opts.APIBaseURL = strings.TrimRight(opts.APIBaseURL, "/")
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	return &Channel{opts: opts}
}

// Type returns envelope.ChannelTelegram.
func (c *Channel) Type() string { return envelope.ChannelTelegram }

// Info describes Telegram: forum topics (threads), inline keyboards,
// long polling as an inbound source; the Bot API has no delivery
// receipts. 30 messages/s per bot and 1/s per chat.
func (c *Channel) Info() channels.Info {
	return channels.Info{
		DisplayName: "Telegram",
		Outbound:    (*outbound)(nil),
		Threads:     true, RichContent: true, Interactions: true,
		RateLimits: []channels.RateLimit{{Scope: channels.ScopeAccount, PerSec: 30, Burst: 30}, {Scope: channels.ScopeConversation, PerSec: 1, Burst: 3}},
		// About one call a second per chat; 20 a minute in groups.
		StreamEditInterval: 3 * time.Second,
		Settings: []channels.Field{
			{Name: "mode", Type: channels.TypeString, Description: "webhook (default: Telegram posts updates to MIO) or polling (MIO calls getUpdates; no public URL needed)."},
			{Name: "delete_webhook", Type: channels.TypeBoolean, Description: "In polling mode, call deleteWebhook when polling starts."},
			channels.APIBaseURLField(DefaultAPIBaseURL),
		},
		Credentials: []channels.Field{
			{Name: "bot_token", Type: channels.TypeString, Required: true, Secret: true,
				Description: "The bot's token from @BotFather: sends, file downloads, polling."},
		},
		Setup: channels.Setup{
			SettingsExample:    `{"mode":"webhook"}`,
			CredentialsExample: `{"bot_token":"123456:ABC…"}`,
			SecretLabel:        "Secret token (sent by Telegram as X-Telegram-Bot-Api-Secret-Token)",
			Steps: []string{
				"Create the bot with @BotFather; its token is the bot_token.",
				"In webhook mode MIO calls setWebhook with the URL below and the secret token; in polling mode no URL is needed.",
			}},
	}
}

// NewInbound validates the account's configuration and returns its webhook
// handler.
func (c *Channel) NewInbound(acct channels.Account) (channels.Inbound, error) {
	cfg, err := ParseConfig(acct)
	if err != nil {
		return nil, err
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, err
	}
	in := &inbound{cfg: cfg}
	if cfg.BotToken != "" {
		in.ack = &outbound{apiBase: base, client: c.opts.HTTPClient, token: cfg.BotToken}
	}
	return in, nil
}

// NewOutbound validates the account's configuration for sending and
// returns its sender, which also edits (channels.Editor). Sending needs
// only credentials bot_token; the webhook secret is an inbound concern.
func (c *Channel) NewOutbound(acct channels.Account) (channels.Outbound, error) {
	cfg, err := ParseOutboundConfig(acct)
	if err != nil {
		return nil, err
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, err
	}
	return &outbound{apiBase: base, client: c.opts.HTTPClient, token: cfg.BotToken}, nil
}

// Config is one Telegram account's configuration.
//
//   - settings: {"api_base_url": "https://api.telegram.org"} (optional;
//     e.g. a self-hosted Bot API server, needed for files over 20 MB),
//     checked by Options.APIBasePolicy; other keys are ignored. When
//     present it must be a JSON object.
//   - credentials: {"bot_token": "123456:ABC-DEF..."}; optional for inbound
//     (needed to download files and to send). When set it must look like a
//     Bot API token: digits, a colon, then [A-Za-z0-9_-].
//     "mode": "webhook" (default) or "polling" (MIO long-polls getUpdates,
//     see Poller; needs bot_token) and "delete_webhook": true (with
//     polling: deleteWebhook once when polling starts, since Telegram
//     refuses getUpdates while a webhook is set).
//   - webhook secret: the secret_token given to setWebhook; required
//     unless mode is polling, 1–256 characters of [A-Za-z0-9_-].
type Config struct {
	// BotToken is the Bot API token, from credentials "bot_token". Optional.
	BotToken string
	// WebhookSecret is compared with the X-Telegram-Bot-Api-Secret-Token
	// header of every request. Required.
	WebhookSecret string
}

var (
	secretTokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
	botTokenRE    = regexp.MustCompile(`^[0-9]+:[A-Za-z0-9_-]+$`)
)

// accountAPIBase is the account's settings api_base_url, else
// Options.APIBaseURL.
func (c *Channel) accountAPIBase(acct channels.Account) (string, error) {
	return c.opts.APIBasePolicy.AccountAPIBase("telegram", acct.Settings, c.opts.APIBaseURL)
}

// ParseConfig decodes and validates an account's Telegram configuration.
// Errors wrap channels.ErrInvalidConfig.
func ParseConfig(acct channels.Account) (Config, error) {
	poll, err := ParsePollConfig(acct.Settings)
	if err != nil {
		return Config{}, err
	}
	var creds struct {
		BotToken string `json:"bot_token"`
	}
	if err := channels.DecodeObject("telegram credentials", acct.Credentials, &creds); err != nil {
		return Config{}, err
	}
	cfg := Config{BotToken: creds.BotToken, WebhookSecret: acct.WebhookSecret}
	switch {
	case poll.Polling && cfg.BotToken == "":
		return Config{}, fmt.Errorf("%w: telegram: settings mode polling needs credentials bot_token", channels.ErrInvalidConfig)
	case poll.Polling && cfg.WebhookSecret == "":
		// A polling bot needs no webhook: every webhook is refused.
		return cfg, nil
	}
	if cfg.WebhookSecret == "" {
		return Config{}, fmt.Errorf("%w: telegram: webhook secret is required", channels.ErrInvalidConfig)
	}
	if !secretTokenRE.MatchString(cfg.WebhookSecret) {
		return Config{}, fmt.Errorf("%w: telegram: webhook secret must be 1-256 characters of A-Za-z0-9_-", channels.ErrInvalidConfig)
	}
	if cfg.BotToken != "" && !botTokenRE.MatchString(cfg.BotToken) {
		return Config{}, fmt.Errorf("%w: telegram: credentials bot_token is not a Bot API token", channels.ErrInvalidConfig)
	}
	return cfg, nil
}

// ParseOutboundConfig decodes an account's configuration for sending: it
// requires credentials bot_token and ignores the webhook secret. Errors
// wrap channels.ErrInvalidConfig.
func ParseOutboundConfig(acct channels.Account) (Config, error) {
	if err := channels.DecodeObject("telegram settings", acct.Settings, &struct{}{}); err != nil {
		return Config{}, err
	}
	var creds struct {
		BotToken string `json:"bot_token"`
	}
	if err := channels.DecodeObject("telegram credentials", acct.Credentials, &creds); err != nil {
		return Config{}, err
	}
	if creds.BotToken == "" {
		return Config{}, fmt.Errorf("%w: telegram: credentials bot_token is required to send", channels.ErrInvalidConfig)
	}
	if !botTokenRE.MatchString(creds.BotToken) {
		return Config{}, fmt.Errorf("%w: telegram: credentials bot_token is not a Bot API token", channels.ErrInvalidConfig)
	}
	return Config{BotToken: creds.BotToken, WebhookSecret: acct.WebhookSecret}, nil
}
