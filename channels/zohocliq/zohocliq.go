// Package zohocliq is MIO's adapter for Zoho Cliq webhook bots.
//
// A Cliq bot with execution_type "webhook" POSTs its handler events
// (message_handler, mention_handler, ...) to MIO with the context objects it
// is permitted to see (chat, message, user, attachments, ...). Cliq's field
// names, retry behaviour and dedup id are not documented precisely, so the
// mapping from payload to envelope is a table of JSON paths that each
// account may override in its settings, and the dedup key path is
// configurable too.
//
// Requests are authenticated either with an RSA-SHA256 signature in
// X-Cliq-Signature (mode "rsa") or with a shared token in the X-Mio-Token
// header or the token query parameter (mode "token").
package zohocliq

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// DefaultAPIBaseURL is the Cliq API base (US data centre) used when neither
// Options.APIBaseURL nor the account's api_base_url setting is set.
const DefaultAPIBaseURL = "https://cliq.zoho.com"

// Verification modes.
const (
	// ModeRSA verifies X-Cliq-Signature (base64 RSA-SHA256, PKCS#1 v1.5,
	// over the raw body) with the account's public key.
	ModeRSA = "rsa"
	// ModeToken compares a shared secret (the account's webhook secret)
	// with the X-Mio-Token header or the token query parameter.
	ModeToken = "token"
)

// Mapping table fields. Each names one envelope field (or one attribute of
// an attachment item) and is filled from the first of its JSON paths that
// yields a value.
const (
	FieldEvent             = "event"
	FieldText              = "text"
	FieldSenderID          = "sender_id"
	FieldSenderName        = "sender_name"
	FieldSenderIsBot       = "sender_is_bot"
	FieldConversationID    = "conversation_id"
	FieldConversationTitle = "conversation_title"
	FieldConversationType  = "conversation_type"
	FieldMessageID         = "message_id"
	FieldTime              = "time"
	FieldThreadID          = "thread_id"
	FieldReplyTo           = "reply_to"
	// FieldAttachments paths name an array of file objects or one file
	// object; the attachment_* paths are relative to each item.
	FieldAttachments    = "attachments"
	FieldAttachmentURL  = "attachment_url"
	FieldAttachmentName = "attachment_name"
	FieldAttachmentType = "attachment_type"
	FieldAttachmentSize = "attachment_size"
)

// DefaultFieldPaths is the mapping table used when an account's settings do
// not override a field. A path is dot-separated object keys (array indexes
// allowed); "a+b" joins the values of a and b with a space. Payloads are
// read both flat ({"chat":…}) and wrapped as extension events
// ({"handler":{"type":…},"params":{"chat":…}}). All UNVERIFIED.
func DefaultFieldPaths() map[string][]string {
	return map[string][]string{
		FieldEvent:             {"handler", "handler.type", "type"},
		FieldText:              {"message.text", "message", "params.message.text", "params.message"},
		FieldSenderID:          {"user.id", "params.user.id"},
		FieldSenderName:        {"user.first_name+user.last_name", "user.name", "params.user.first_name+params.user.last_name", "params.user.name"},
		FieldSenderIsBot:       {"user.is_bot", "params.user.is_bot"},
		FieldConversationID:    {"chat.id", "params.chat.id"},
		FieldConversationTitle: {"chat.title", "params.chat.title"},
		FieldConversationType:  {"chat.type", "params.chat.type"},
		FieldMessageID:         {"message.id", "params.message.id"},
		FieldTime:              {"message.time", "time", "params.message.time", "timestamp"},
		FieldThreadID:          {},
		FieldReplyTo:           {},
		FieldAttachments:       {"attachments", "message.file", "params.attachments", "params.message.file"},
		FieldAttachmentURL:     {"url"},
		FieldAttachmentName:    {"name"},
		FieldAttachmentType:    {"type"},
		FieldAttachmentSize:    {"size"},
	}
}

// requiredFields must keep at least one path: without them no message can
// be built.
var requiredFields = []string{FieldEvent, FieldConversationID, FieldSenderID}

// DefaultMessageHandlers are the handler names whose events are stored. The
// short forms are what Deluge handlers forwarding to a webhook often send.
func DefaultMessageHandlers() []string {
	return []string{"message_handler", "mention_handler", "message", "mention"}
}

// DefaultConversationTypes maps chat.type values (lower-cased) to envelope
// conversation types; unlisted values map to group.
func DefaultConversationTypes() map[string]string {
	return map[string]string{
		"direct":  envelope.ConversationDM,
		"dm":      envelope.ConversationDM,
		"bot":     envelope.ConversationDM,
		"channel": envelope.ConversationChannel,
		// A channel thread (Zoho's sample: chat.type "thread" with
		// parent_resource naming the channel); chat.id is the thread's
		// own chat, where replies go.
		"thread": envelope.ConversationChannel,
	}
}

// MappingSource says where DefaultFieldPaths come from and how sure they
// are; account creation shows it with the mapping in force.
const MappingSource = "defaults checked against Zoho's own sample of a webhook bot's message_handler body " +
	"(zcatalyst-cli template: {name, unique_name, handler: {type}, response_url, type: \"bot\", timestamp, " +
	"params: {message, user, chat, attachments, ...}}) and the older flat form; not confirmed against live Cliq " +
	"traffic: override with settings field_paths, message_handlers and dedup_field if your payloads differ"

var _ channels.ConfigDescriber = (*Channel)(nil)

// DescribeConfig returns the payload mapping in force for an account with
// settings: verification mode, handler names stored, the field paths
// (defaults merged with field_paths), conversation types, dedup key and
// API base. Secrets are not shown.
func (c *Channel) DescribeConfig(settings json.RawMessage) (any, error) {
	// The shared token is a secret and not needed to describe the mapping.
	cfg, err := c.ParseConfig(channels.Account{Settings: settings, WebhookSecret: "-"})
	if err != nil {
		return nil, err
	}
	handlers := make([]string, 0, len(cfg.MessageHandlers))
	for h := range cfg.MessageHandlers {
		handlers = append(handlers, h)
	}
	sort.Strings(handlers)
	dedup := cfg.DedupField
	if dedup == "" {
		dedup = "field_paths.message_id, else sha256 of conversation id, message id or time, and text"
	}
	return map[string]any{
		"source":             MappingSource,
		"mode":               cfg.Mode,
		"message_handlers":   handlers,
		"field_paths":        cfg.FieldPaths,
		"conversation_types": cfg.ConversationTypes,
		"dedup_key":          dedup,
		"api_base_url":       cfg.APIBaseURL,
	}, nil
}

// Options holds the adapter's injectable dependencies. The zero value is
// ready to use.
type Options struct {
	// APIBaseURL is the default Cliq API base for accounts whose settings
	// name none. Default DefaultAPIBaseURL.
	APIBaseURL string
	// APIBasePolicy validates the accounts' api_base_url settings.
	// Default: https only.
	APIBasePolicy channels.APIBasePolicy
	// HTTPClient calls the Cliq API. Default http.DefaultClient.
	HTTPClient *http.Client
}

// Channel is the Zoho Cliq adapter.
type Channel struct {
	opts Options
}

var (
	_ channels.Channel         = (*Channel)(nil)
	_ channels.OutboundChannel = (*Channel)(nil)
)

// New returns a Zoho Cliq adapter, applying defaults to zero options.
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

// Type returns envelope.ChannelZohoCliq.
func (c *Channel) Type() string { return envelope.ChannelZohoCliq }

// Info describes Zoho Cliq: cards, no threads or receipts. Editing
// exists in Cliq but its REST path is unverified, so the sender does not
// implement it. 10 messages/s per bot.
func (c *Channel) Info() channels.Info {
	return channels.Info{
		DisplayName: "Zoho Cliq",
		Outbound:    (*outbound)(nil),
		RichContent: true,
		RateLimits:  []channels.RateLimit{{Scope: channels.ScopeAccount, PerSec: 10, Burst: 10}},
		Settings: []channels.Field{
			{Name: "mode", Type: channels.TypeString, Description: "rsa (verify X-Cliq-Signature with public_key_pem) or token (the webhook secret is a shared token). Default rsa when public_key_pem is set, else token."},
			{Name: "public_key_pem", Type: channels.TypeString, Description: "The bot's RSA public key (PEM), for mode rsa."},
			{Name: "dedup_field", Type: channels.TypeString, Description: "The payload path of the dedup key. Default the message id."},
			{Name: "message_handlers", Type: channels.TypeArray, Description: "The handler names whose events are stored. Default the message handlers (DescribeConfig shows them)."},
			{Name: "field_paths", Type: channels.TypeObject, Description: "Overrides of the payload mapping: envelope field to payload paths."},
			{Name: "conversation_types", Type: channels.TypeObject, Description: "Chat types (lower case) to conversation types."},
			channels.APIBaseURLField(DefaultAPIBaseURL),
		},
		Credentials: []channels.Field{
			{Name: "access_token", Type: channels.TypeString, Secret: true, Description: "A static OAuth access token (not renewed); or give the refresh-token grant below."},
			{Name: "client_id", Type: channels.TypeString, Secret: true, Description: "Refresh-token grant: the OAuth client id."},
			{Name: "client_secret", Type: channels.TypeString, Secret: true, Description: "Refresh-token grant: the OAuth client secret."},
			{Name: "refresh_token", Type: channels.TypeString, Secret: true, Description: "Refresh-token grant: the refresh token MIO renews access tokens with."},
			{Name: "accounts_server", Type: channels.TypeString, Secret: true, Description: "Refresh-token grant: the accounts server of the account's data centre (https://accounts.zoho.com, .eu, .in …)."},
		},
		Setup: channels.Setup{
			CredentialsExample: `{"access_token":"1000.…"}`,
			SecretLabel:        "Shared token (sent by the bot handler as X-Mio-Token)",
			Steps: []string{
				"In the Cliq bot's message handler, invoke the URL below with the header X-Mio-Token set to the shared token.",
			}},
	}
}

// Config is one Cliq account's configuration.
//
// Settings (plain JSON, all optional):
//   - "mode": "rsa" or "token". Default "rsa" when public_key_pem is set,
//     else "token".
//   - "public_key_pem": the extension's RSA public key, PEM (PKIX "PUBLIC
//     KEY" or PKCS#1 "RSA PUBLIC KEY") or bare base64 DER. Required in mode
//     "rsa".
//   - "dedup_field": JSON path of the dedup key. Default: the message_id
//     field of the mapping table (message.id, then params.message.id). When
//     it is absent from a payload the key is the sha256 hex of chat id,
//     message id (or time) and text.
//   - "message_handlers": handler names whose events are stored. Default
//     DefaultMessageHandlers.
//   - "field_paths": {field: [path, …]} overriding DefaultFieldPaths per
//     field (see the Field* constants).
//   - "conversation_types": {chat type: "dm"|"group"|"channel"} added to
//     DefaultConversationTypes.
//   - "api_base_url": the account's Cliq data centre, e.g.
//     "https://cliq.zoho.eu". Default Options.APIBaseURL. Inbound and
//     outbound.
//
// Credentials (decrypted JSON): none are read by inbound. Outbound sends
// with an OAuth access token as "Zoho-oauthtoken" (scope
// ZohoCliq.Messages.CREATE), from one of:
//   - a refresh-token grant, "client_id", "client_secret",
//     "refresh_token" and "accounts_server" (the accounts server of the
//     account's data centre, e.g. "https://accounts.zoho.eu"): MIO
//     obtains and renews the access tokens (see Grant; the account's
//     channels.TokenSource gives them). A 401 renews the token once and
//     sends again.
//   - "access_token", a static token: sent as is, never renewed; Zoho
//     expires it after an hour and a 401 then fails the send permanently
//     with channels.ErrStaticTokenRefused.
//
// A grant is checked with the rest of the configuration.
//
// Webhook secret: the shared token, required in mode "token".
type Config struct {
	// AccessToken is the static OAuth access token used to send, from
	// credentials "access_token"; empty with a grant. Outbound only.
	AccessToken string
	// Grant is the account's refresh-token grant, nil with a static
	// token. Outbound only.
	Grant channels.Grant
	// APIBaseURL is the account's Cliq API base, without a trailing slash.
	APIBaseURL string
	// ConversationTypes maps lower-cased chat types to conversation types.
	ConversationTypes map[string]string
	// DedupField is the dedup key path; empty means the message_id field.
	DedupField string
	// FieldPaths is the mapping table (DefaultFieldPaths plus overrides).
	FieldPaths map[string][]string
	// MessageHandlers is the set of handler names whose events are stored.
	MessageHandlers map[string]bool
	// Mode is ModeRSA or ModeToken.
	Mode string
	// PublicKey verifies X-Cliq-Signature in ModeRSA.
	PublicKey *rsa.PublicKey
	// Token is the shared secret of ModeToken (the webhook secret).
	Token string
}

type settingsJSON struct {
	Mode              string              `json:"mode"`
	PublicKeyPEM      string              `json:"public_key_pem"`
	DedupField        string              `json:"dedup_field"`
	MessageHandlers   []string            `json:"message_handlers"`
	FieldPaths        map[string][]string `json:"field_paths"`
	ConversationTypes map[string]string   `json:"conversation_types"`
	APIBaseURL        string              `json:"api_base_url"`
}

// ParseConfig decodes and validates an account's configuration. Errors wrap
// channels.ErrInvalidConfig.
func (c *Channel) ParseConfig(acct channels.Account) (Config, error) {
	var s settingsJSON
	if err := channels.DecodeObject("zoho_cliq settings", acct.Settings, &s); err != nil {
		return Config{}, err
	}
	if _, err := c.Grant(acct); err != nil {
		return Config{}, err
	}

	cfg := Config{
		Mode:              strings.ToLower(strings.TrimSpace(s.Mode)),
		Token:             acct.WebhookSecret,
		DedupField:        strings.TrimSpace(s.DedupField),
		MessageHandlers:   map[string]bool{},
		FieldPaths:        DefaultFieldPaths(),
		ConversationTypes: DefaultConversationTypes(),
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeToken
		if strings.TrimSpace(s.PublicKeyPEM) != "" {
			cfg.Mode = ModeRSA
		}
	}
	switch cfg.Mode {
	case ModeRSA:
		key, err := parsePublicKey(s.PublicKeyPEM)
		if err != nil {
			return Config{}, invalidf("public_key_pem: %v", err)
		}
		cfg.PublicKey = key
	case ModeToken:
		if cfg.Token == "" {
			return Config{}, invalidf("mode %q needs the webhook secret (shared token)", ModeToken)
		}
	default:
		return Config{}, invalidf("mode %q, want %q or %q", s.Mode, ModeRSA, ModeToken)
	}

	if cfg.DedupField != "" {
		if err := validatePath(cfg.DedupField); err != nil {
			return Config{}, invalidf("dedup_field: %v", err)
		}
	}

	handlers := s.MessageHandlers
	if handlers == nil {
		handlers = DefaultMessageHandlers()
	}
	for _, h := range handlers {
		if strings.TrimSpace(h) == "" {
			return Config{}, invalidf("message_handlers: empty handler name")
		}
		cfg.MessageHandlers[h] = true
	}
	if len(cfg.MessageHandlers) == 0 {
		return Config{}, invalidf("message_handlers: empty list")
	}

	for field, paths := range s.FieldPaths {
		if _, known := cfg.FieldPaths[field]; !known {
			return Config{}, invalidf("field_paths: unknown field %q (known: %s)", field, strings.Join(knownFields(), ", "))
		}
		for _, p := range paths {
			if err := validatePath(p); err != nil {
				return Config{}, invalidf("field_paths.%s: %v", field, err)
			}
		}
		cfg.FieldPaths[field] = append([]string(nil), paths...)
	}
	for _, field := range requiredFields {
		if len(cfg.FieldPaths[field]) == 0 {
			return Config{}, invalidf("field_paths.%s: needs at least one path", field)
		}
	}

	for chatType, convType := range s.ConversationTypes {
		switch convType {
		case envelope.ConversationDM, envelope.ConversationGroup, envelope.ConversationChannel:
		default:
			return Config{}, invalidf("conversation_types.%s: %q, want dm, group or channel", chatType, convType)
		}
		cfg.ConversationTypes[strings.ToLower(chatType)] = convType
	}

	base, err := c.apiBaseURL(s)
	if err != nil {
		return Config{}, err
	}
	cfg.APIBaseURL = base
	return cfg, nil
}

// apiBaseURL is settings api_base_url (checked by Options.APIBasePolicy),
// else Options.APIBaseURL.
func (c *Channel) apiBaseURL(s settingsJSON) (string, error) {
	if s.APIBaseURL == "" {
		return c.opts.APIBaseURL, nil
	}
	return c.opts.APIBasePolicy.Check("zoho_cliq settings "+channels.SettingAPIBaseURL, s.APIBaseURL)
}

// NewInbound validates the account's configuration and returns its webhook
// handler.
func (c *Channel) NewInbound(acct channels.Account) (channels.Inbound, error) {
	cfg, err := c.ParseConfig(acct)
	if err != nil {
		return nil, err
	}
	return &inbound{cfg: cfg}, nil
}

// NewOutbound validates the account's configuration for sending and
// returns its sender. The sender does not edit (see outbound).
func (c *Channel) NewOutbound(acct channels.Account) (channels.Outbound, error) {
	cfg, err := c.ParseOutboundConfig(acct)
	if err != nil {
		return nil, err
	}
	tokens := channels.TokenSource(staticTokens(cfg.AccessToken))
	if cfg.Grant != nil {
		if acct.Tokens == nil {
			return nil, invalidf("%v", errNoRenewal)
		}
		tokens = acct.Tokens
	}
	return &outbound{apiBase: cfg.APIBaseURL, client: c.opts.HTTPClient, tokens: tokens, renewed: cfg.Grant != nil}, nil
}

// ParseOutboundConfig decodes an account's configuration for sending:
// settings api_base_url and credentials holding a refresh-token grant or
// a static access_token (one is required). The inbound verification
// settings are not checked. Errors wrap channels.ErrInvalidConfig.
func (c *Channel) ParseOutboundConfig(acct channels.Account) (Config, error) {
	var s settingsJSON
	if err := channels.DecodeObject("zoho_cliq settings", acct.Settings, &s); err != nil {
		return Config{}, err
	}
	var creds struct {
		AccessToken string `json:"access_token"`
	}
	if err := channels.DecodeObject("zoho_cliq credentials", acct.Credentials, &creds); err != nil {
		return Config{}, err
	}
	g, err := c.Grant(acct)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{AccessToken: creds.AccessToken, Grant: g}
	switch {
	case g != nil:
	case cfg.AccessToken == "":
		return Config{}, invalidf("credentials: a refresh-token grant (client_id, client_secret, refresh_token, accounts_server) or access_token is required to send")
	case channels.HasSpaceOrControl(cfg.AccessToken):
		return Config{}, invalidf("credentials access_token contains whitespace or control characters")
	}
	base, err := c.apiBaseURL(s)
	if err != nil {
		return Config{}, err
	}
	cfg.APIBaseURL = base
	return cfg, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: zoho_cliq: %s", channels.ErrInvalidConfig, fmt.Sprintf(format, args...))
}

func knownFields() []string {
	var out []string
	for f := range DefaultFieldPaths() {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// validatePath checks a mapping path: "+"-joined parts of non-empty,
// dot-separated segments.
func validatePath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	for _, part := range strings.Split(p, "+") {
		for _, seg := range strings.Split(part, ".") {
			if seg == "" {
				return fmt.Errorf("path %q has an empty segment", p)
			}
		}
	}
	return nil
}

// parsePublicKey reads an RSA public key from PEM (PKIX or PKCS#1) or bare
// base64 DER.
func parsePublicKey(s string) (*rsa.PublicKey, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("required in mode %q", ModeRSA)
	}
	var der []byte
	if block, _ := pem.Decode([]byte(s)); block != nil {
		der = block.Bytes
	} else {
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
		if err != nil {
			return nil, fmt.Errorf("neither PEM nor base64 DER")
		}
		der = b
	}
	var key *rsa.PublicKey
	if pub, err := x509.ParsePKIXPublicKey(der); err == nil {
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("not an RSA key (%T)", pub)
		}
		key = k
	} else if k, err := x509.ParsePKCS1PublicKey(der); err == nil {
		key = k
	} else {
		return nil, fmt.Errorf("not a PKIX or PKCS#1 public key")
	}
	if key.N.BitLen() < 1024 {
		return nil, fmt.Errorf("RSA key of %d bits is too small", key.N.BitLen())
	}
	return key, nil
}
