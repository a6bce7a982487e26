// Package whatsapp is MIO's WhatsApp Cloud API (Meta) adapter. Meta first
// verifies the webhook URL with a GET handshake (hub.mode, hub.challenge,
// hub.verify_token), then POSTs notifications signed with
// X-Hub-Signature-256, an HMAC-SHA256 of the raw body keyed with the App
// Secret. One notification can carry several messages and delivery
// statuses; messages become canonical envelopes deduplicated on their wamid,
// statuses become channels.ProviderStatus receipts.
//
// One MIO account is one business phone number (its phone_number_id): a
// conversation is (phone_number_id, wa_id), so within the account the
// conversation id is the customer's wa_id and every conversation is a DM.
// Media arrive as pending attachments whose source reference is the media
// id, resolved later through the Graph API with the access token.
package whatsapp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// DefaultAPIBaseURL is the Graph API endpoint used when Options.APIBaseURL
// is empty.
const DefaultAPIBaseURL = "https://graph.facebook.com"

// Options holds what the adapter needs from its environment. The zero value
// is ready to use.
type Options struct {
	// APIBaseURL is the Graph API base URL (media lookups and, later,
	// sends). Default DefaultAPIBaseURL; tests point it at a local fake.
	APIBaseURL string
	// APIBasePolicy validates the accounts' api_base_url settings.
	// Default: https only.
	APIBasePolicy channels.APIBasePolicy
	// HTTPClient makes Graph API calls. Default http.DefaultClient.
	HTTPClient *http.Client
}

// Channel is the WhatsApp Cloud API adapter. It is safe for concurrent use.
type Channel struct {
	opts Options
}

var (
	_ channels.Channel         = (*Channel)(nil)
	_ channels.OutboundChannel = (*Channel)(nil)
)

// New returns a WhatsApp adapter, applying defaults to opts.
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

// Type returns envelope.ChannelWhatsApp.
func (c *Channel) Type() string { return envelope.ChannelWhatsApp }

// Info describes WhatsApp: delivery receipts and interactive messages;
// no threads, and the Cloud API cannot edit a sent message. 80 messages/s
// per phone number.
func (c *Channel) Info() channels.Info {
	return channels.Info{
		DisplayName: "WhatsApp Cloud API",
		Outbound:    (*outbound)(nil),
		Receipts:    true, RichContent: true, Interactions: true,
		RateLimits: []channels.RateLimit{{Scope: channels.ScopeAccount, PerSec: 80, Burst: 80}},
		Settings: []channels.Field{
			{Name: "phone_number_id", Type: channels.TypeString, Description: "The phone number id sends go from and whose webhooks are kept (digits). Default the account's external id."},
			{Name: "graph_version", Type: channels.TypeString, Description: "The Graph API version, such as v21.0. Default none in the URL (Meta's default version)."},
			channels.APIBaseURLField(DefaultAPIBaseURL),
		},
		Credentials: []channels.Field{
			{Name: "access_token", Type: channels.TypeString, Required: true, Secret: true, Description: "A system user access token: sends and media downloads."},
			{Name: "verify_token", Type: channels.TypeString, Secret: true, Description: "Answers Meta's hub.verify_token handshake when the webhook is set up; without it every handshake is refused."},
		},
		Setup: channels.Setup{
			SettingsExample:    `{"phone_number_id":"…","graph_version":"v21.0"}`,
			CredentialsExample: `{"access_token":"EAA…","verify_token":"choose-one"}`,
			SecretLabel:        "App secret (App settings → Basic)",
			Steps: []string{
				"In the Meta app's WhatsApp → Configuration, set the callback URL below and the verify_token you chose.",
				"Subscribe the webhook field messages.",
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
	if _, err := c.accountAPIBase(acct); err != nil {
		return nil, err
	}
	return &inbound{cfg: cfg}, nil
}

// NewOutbound validates the account's configuration for sending and
// returns its sender. The sender does not edit: the Cloud API cannot, so
// the dispatcher sends edits as new messages.
func (c *Channel) NewOutbound(acct channels.Account) (channels.Outbound, error) {
	cfg, err := ParseOutboundConfig(acct)
	if err != nil {
		return nil, err
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, err
	}
	return &outbound{
		endpoint: base + "/" + cfg.PhoneNumberID + "/messages",
		client:   c.opts.HTTPClient,
		token:    cfg.AccessToken,
	}, nil
}

// Config is one WhatsApp account's configuration.
//
//   - settings: {"phone_number_id": "1234567890"}: the account's business
//     phone number; default the account's external id. Outbound sends from
//     it; inbound keeps only changes addressed to it (one app webhook
//     carries every number of the app, and a conversation is
//     (phone_number_id, wa_id), so another number's messages must not
//     become this account's). Without it inbound keeps every change.
//     "api_base_url" (default https://graph.facebook.com, checked by
//     Options.APIBasePolicy) and "graph_version" (e.g. "v21.0"; default
//     none: unversioned paths, which Meta serves with the app's default
//     version) form the Graph base {api_base_url}/{graph_version} of
//     sends and media lookups.
//     Other keys are ignored; when present settings must be a JSON object.
//   - credentials: {"verify_token": "...", "access_token": "..."}.
//     verify_token is the Verify Token entered in the App Dashboard's
//     webhook setup; without it every GET handshake is refused. access_token
//     (a system-user token) is optional for inbound and needed to fetch
//     media and to send.
//   - webhook secret: the App Secret that signs X-Hub-Signature-256;
//     required.
type Config struct {
	// AccessToken is the Graph API bearer token, from credentials
	// "access_token". Optional for inbound.
	AccessToken string
	// AppSecret keys the X-Hub-Signature-256 HMAC; the account's webhook
	// secret. Required.
	AppSecret string
	// PhoneNumberID is the account's phone number id, from settings
	// "phone_number_id" or else the account's external id: the number
	// outbound sends from, and the only one whose changes inbound keeps
	// (empty keeps all).
	PhoneNumberID string
	// VerifyToken answers the GET hub.verify_token handshake, from
	// credentials "verify_token". Empty refuses every handshake.
	VerifyToken string
}

// ParseConfig decodes and validates an account's WhatsApp configuration.
// Errors wrap channels.ErrInvalidConfig.
func ParseConfig(acct channels.Account) (Config, error) {
	var settings struct {
		PhoneNumberID string `json:"phone_number_id"`
	}
	if err := channels.DecodeObject("whatsapp settings", acct.Settings, &settings); err != nil {
		return Config{}, err
	}
	var creds struct {
		AccessToken string `json:"access_token"`
		VerifyToken string `json:"verify_token"`
	}
	if err := channels.DecodeObject("whatsapp credentials", acct.Credentials, &creds); err != nil {
		return Config{}, err
	}
	if acct.WebhookSecret == "" {
		return Config{}, fmt.Errorf("%w: whatsapp: webhook secret (the App Secret) is required", channels.ErrInvalidConfig)
	}
	phone := settings.PhoneNumberID
	if phone == "" {
		phone = acct.ExternalID
	}
	return Config{AccessToken: creds.AccessToken, AppSecret: acct.WebhookSecret, VerifyToken: creds.VerifyToken, PhoneNumberID: phone}, nil
}

// ParseOutboundConfig decodes an account's configuration for sending:
// credentials access_token (required) and the phone number id (settings
// phone_number_id, else the account's external id; digits only). The App
// Secret and verify token are inbound concerns and not required. Errors
// wrap channels.ErrInvalidConfig.
func ParseOutboundConfig(acct channels.Account) (Config, error) {
	var settings struct {
		PhoneNumberID string `json:"phone_number_id"`
	}
	if err := channels.DecodeObject("whatsapp settings", acct.Settings, &settings); err != nil {
		return Config{}, err
	}
	var creds struct {
		AccessToken string `json:"access_token"`
	}
	if err := channels.DecodeObject("whatsapp credentials", acct.Credentials, &creds); err != nil {
		return Config{}, err
	}
	cfg := Config{AccessToken: creds.AccessToken, PhoneNumberID: settings.PhoneNumberID}
	if cfg.PhoneNumberID == "" {
		cfg.PhoneNumberID = acct.ExternalID
	}
	switch {
	case cfg.AccessToken == "":
		return Config{}, fmt.Errorf("%w: whatsapp: credentials access_token is required to send", channels.ErrInvalidConfig)
	case channels.HasSpaceOrControl(cfg.AccessToken):
		return Config{}, fmt.Errorf("%w: whatsapp: credentials access_token contains whitespace or control characters", channels.ErrInvalidConfig)
	case cfg.PhoneNumberID == "":
		return Config{}, fmt.Errorf("%w: whatsapp: settings phone_number_id (or the account's external id) is required to send", channels.ErrInvalidConfig)
	case strings.Trim(cfg.PhoneNumberID, "0123456789") != "":
		return Config{}, fmt.Errorf("%w: whatsapp: phone number id %q is not numeric", channels.ErrInvalidConfig, cfg.PhoneNumberID)
	}
	return cfg, nil
}

var graphVersionRE = regexp.MustCompile(`^v[0-9]{1,3}\.[0-9]{1,3}$`)

// accountAPIBase is the account's Graph base: settings api_base_url (else
// Options.APIBaseURL) followed by settings graph_version when set.
func (c *Channel) accountAPIBase(acct channels.Account) (string, error) {
	base, err := c.opts.APIBasePolicy.AccountAPIBase("whatsapp", acct.Settings, c.opts.APIBaseURL)
	if err != nil {
		return "", err
	}
	var s struct {
		GraphVersion string `json:"graph_version"`
	}
	if err := channels.DecodeObject("whatsapp settings", acct.Settings, &s); err != nil {
		return "", err
	}
	if s.GraphVersion == "" {
		return base, nil
	}
	if !graphVersionRE.MatchString(s.GraphVersion) {
		return "", fmt.Errorf("%w: whatsapp: settings graph_version %q is not a Graph API version such as v21.0", channels.ErrInvalidConfig, s.GraphVersion)
	}
	return base + "/" + s.GraphVersion, nil
}

// Sign returns the X-Hub-Signature-256 value Meta sends for body:
// "sha256=" + lowercase hex HMAC-SHA256(appSecret, body). Tests and
// benchmarks use it to build signed requests.
func Sign(appSecret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(appSecret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
