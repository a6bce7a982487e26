// Package googlechat is MIO's adapter for Google Chat apps built on an
// HTTP endpoint.
//
// Inbound, Chat POSTs interaction events (MESSAGE, ADDED_TO_SPACE,
// REMOVED_FROM_SPACE, CARD_CLICKED) with a bearer token in Authorization,
// in one of the two forms Google documents, chosen by the app's
// "Authentication Audience": a JWT issued by chat@system.gserviceaccount.com
// for the Cloud project number, verified with the x509 certificates at
// certs_url; or a Google OIDC ID token for the endpoint URL whose email is
// chat@system.gserviceaccount.com, verified with the JWKS at
// oidc_certs_url. Keys are fetched, cached and fetched again on an unknown
// key id (keys.go).
//
// Outbound, it calls the Chat REST API as the app (scope chat.bot) with
// access tokens obtained from the account's service-account key by the
// JWT-bearer grant (grant.go), renewed by MIO's token engine: create a
// message (in a thread when one is named), update it (Editor) and delete
// it (Deleter); rich content becomes a cardsV2 card.
package googlechat

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Production defaults of Options and of the account settings.
const (
	DefaultAPIBaseURL   = "https://chat.googleapis.com"
	DefaultTokenURL     = "https://oauth2.googleapis.com/token"
	DefaultCertsURL     = "https://www.googleapis.com/service_accounts/v1/metadata/x509/chat@system.gserviceaccount.com"
	DefaultOIDCCertsURL = "https://www.googleapis.com/oauth2/v3/certs"
	// DefaultKeyRefreshInterval bounds how often an unknown key id makes
	// the adapter fetch a key set again.
	DefaultKeyRefreshInterval = 30 * time.Second
)

// Google's identities in Chat's bearer tokens.
const (
	// ChatIssuer is the issuer of project-number tokens and the email of
	// OIDC ID tokens Chat sends.
	ChatIssuer = "chat@system.gserviceaccount.com"
	// OIDCIssuer is the issuer of Google ID tokens (also written without
	// the scheme).
	OIDCIssuer = "https://accounts.google.com"
)

// Options holds the adapter's injectable dependencies. The zero value is
// ready to use.
type Options struct {
	// APIBaseURL is the Chat API base for accounts whose settings name
	// none. Default DefaultAPIBaseURL.
	APIBaseURL string
	// TokenURL is the OAuth token endpoint for accounts whose settings and
	// key name none. Default DefaultTokenURL.
	TokenURL string
	// CertsURL and OIDCCertsURL are the key sets of the two token forms
	// for accounts whose settings name none. Defaults DefaultCertsURL and
	// DefaultOIDCCertsURL.
	CertsURL     string
	OIDCCertsURL string
	// APIBasePolicy validates the URLs accounts' settings name. Default:
	// https only.
	APIBasePolicy channels.APIBasePolicy
	// HTTPClient calls the Chat API, the token endpoint and the key sets.
	// Default http.DefaultClient.
	HTTPClient *http.Client
	// KeyRefreshInterval bounds how often an unknown key id fetches a key
	// set again. Default DefaultKeyRefreshInterval.
	KeyRefreshInterval time.Duration
	// Now is the clock of the JWT-bearer assertions. Default time.Now.
	Now func() time.Time
}

// Channel is the Google Chat adapter. One Channel serves every Google Chat
// account; the key sets it fetches are shared by them.
type Channel struct {
	opts Options
	keys *keyCache
}

var (
	_ channels.Channel         = (*Channel)(nil)
	_ channels.OutboundChannel = (*Channel)(nil)
)

// New returns a Google Chat adapter, applying defaults to zero options.
func New(opts Options) *Channel {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
		*s = strings.TrimRight(*s, "/")
	}
	def(&opts.APIBaseURL, DefaultAPIBaseURL)
	def(&opts.TokenURL, DefaultTokenURL)
	def(&opts.CertsURL, DefaultCertsURL)
	def(&opts.OIDCCertsURL, DefaultOIDCCertsURL)
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.KeyRefreshInterval <= 0 {
		opts.KeyRefreshInterval = DefaultKeyRefreshInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Channel{opts: opts, keys: newKeyCache(opts.HTTPClient, opts.KeyRefreshInterval)}
}

// Type returns envelope.ChannelGoogleChat.
func (c *Channel) Type() string { return envelope.ChannelGoogleChat }

// Info describes Google Chat: threads and cards, edits and deletes. Chat
// allows one write per second in a space (60 per minute) and 3,000
// message writes per minute per project.
func (c *Channel) Info() channels.Info {
	return channels.Info{
		DisplayName:  "Google Chat",
		Outbound:     (*outbound)(nil),
		Threads:      true,
		RichContent:  true,
		Interactions: true,
		RateLimits: []channels.RateLimit{
			{Scope: channels.ScopeConversation, PerSec: 1, Burst: 1},
			{Scope: channels.ScopeAccount, PerSec: 50, Burst: 50},
		},
		// One write a second per space.
		StreamEditInterval: time.Second,
		Settings: []channels.Field{
			{Name: "project_number", Type: channels.TypeString, Description: "The Cloud project number: the audience of Chat's tokens when the app's Authentication Audience is Project Number. Default the account's external id."},
			{Name: "endpoint_url", Type: channels.TypeString, Description: "The app's HTTP endpoint URL exactly as configured in Chat: the audience of Chat's ID tokens when the app's Authentication Audience is HTTP endpoint URL."},
			channels.APIBaseURLField(DefaultAPIBaseURL),
			{Name: "token_url", Type: channels.TypeString, Description: "The OAuth token endpoint of the JWT-bearer grant. Default the key's token_uri, else " + DefaultTokenURL + "."},
			{Name: "certs_url", Type: channels.TypeString, Description: "The x509 certificates of chat@system.gserviceaccount.com (project-number tokens). Default " + DefaultCertsURL + "."},
			{Name: "oidc_certs_url", Type: channels.TypeString, Description: "Google's OIDC key set (JWKS, ID tokens). Default " + DefaultOIDCCertsURL + "."},
		},
		Credentials: []channels.Field{
			{Name: "type", Type: channels.TypeString, Secret: true, Description: "The key file's type: service_account."},
			{Name: "project_id", Type: channels.TypeString, Secret: true, Description: "The key file's Cloud project id."},
			{Name: "private_key_id", Type: channels.TypeString, Secret: true, Description: "The key's id (the assertion's kid)."},
			{Name: "private_key", Type: channels.TypeString, Required: true, Secret: true, Description: "The service account's RSA private key (PEM), as in the key file."},
			{Name: "client_email", Type: channels.TypeString, Required: true, Secret: true, Description: "The service account's email, as in the key file."},
			{Name: "client_id", Type: channels.TypeString, Secret: true, Description: "The key file's client id."},
			{Name: "token_uri", Type: channels.TypeString, Secret: true, Description: "The key file's token endpoint."},
		},
		Setup: channels.Setup{
			SettingsExample:    `{"project_number":"123456789012"}`,
			CredentialsExample: `{"type":"service_account","client_email":"mio@project.iam.gserviceaccount.com","private_key":"-----BEGIN PRIVATE KEY-----\n…","private_key_id":"…","token_uri":"https://oauth2.googleapis.com/token"}`,
			Steps: []string{
				"In the Google Cloud console, enable the Google Chat API and create a service account with a JSON key: the key file is the credentials.",
				"In the Chat API's Configuration, choose HTTP endpoint URL as the connection, paste the URL below, and pick the Authentication Audience: Project Number (set project_number or the external id) or HTTP endpoint URL (set endpoint_url to the URL below).",
				"Add the app to a space or message it directly.",
			}},
	}
}

// Config is one Google Chat account's configuration.
//
// Settings (plain JSON, all optional, but one audience is required):
//   - "project_number": the audience of project-number tokens. Default
//     the account's external id.
//   - "endpoint_url": the audience of OIDC ID tokens: the app's HTTP
//     endpoint URL as configured in Chat (MIO's webhook URL).
//   - "api_base_url", "token_url", "certs_url", "oidc_certs_url": the
//     Chat API base, the OAuth token endpoint and the two key sets.
//     Defaults the Options', checked by Options.APIBasePolicy.
//
// Credentials: the service-account key file as Google Cloud downloads it
// ("client_email" and "private_key" are required to send; "private_key_id"
// becomes the assertion's kid; "token_uri" is the token endpoint when
// settings name none).
type Config struct {
	// ProjectNumber is the audience of project-number tokens; empty:
	// such tokens are refused.
	ProjectNumber string
	// EndpointURL is the audience of OIDC ID tokens; empty: such tokens
	// are refused.
	EndpointURL  string
	APIBaseURL   string
	TokenURL     string
	CertsURL     string
	OIDCCertsURL string
}

type settingsJSON struct {
	ProjectNumber string `json:"project_number"`
	EndpointURL   string `json:"endpoint_url"`
	APIBaseURL    string `json:"api_base_url"`
	TokenURL      string `json:"token_url"`
	CertsURL      string `json:"certs_url"`
	OIDCCertsURL  string `json:"oidc_certs_url"`
}

// ParseConfig decodes and validates an account's settings. Errors wrap
// channels.ErrInvalidConfig.
func (c *Channel) ParseConfig(acct channels.Account) (Config, error) {
	var s settingsJSON
	if err := channels.DecodeObject("google_chat settings", acct.Settings, &s); err != nil {
		return Config{}, err
	}
	cfg := Config{ProjectNumber: strings.TrimSpace(s.ProjectNumber), EndpointURL: strings.TrimSpace(s.EndpointURL)}
	ext := strings.TrimSpace(acct.ExternalID)
	switch {
	case cfg.ProjectNumber == "":
		cfg.ProjectNumber = ext
	case ext != "" && ext != cfg.ProjectNumber:
		return Config{}, invalidf("settings project_number %q differs from the external id %q (the Cloud project number)", cfg.ProjectNumber, ext)
	}
	if cfg.ProjectNumber != "" && strings.Trim(cfg.ProjectNumber, "0123456789") != "" {
		return Config{}, invalidf("project_number %q is not a Cloud project number (digits)", cfg.ProjectNumber)
	}
	if cfg.EndpointURL != "" && !channels.IsHTTPURL(cfg.EndpointURL) {
		return Config{}, invalidf("settings endpoint_url %q is not an http(s) URL", cfg.EndpointURL)
	}
	if cfg.ProjectNumber == "" && cfg.EndpointURL == "" {
		return Config{}, invalidf("an audience is required: project_number (or the external id) for project-number tokens, or endpoint_url for ID tokens")
	}
	var err error
	for _, u := range []struct {
		name, raw, def string
		dst            *string
	}{
		{channels.SettingAPIBaseURL, s.APIBaseURL, c.opts.APIBaseURL, &cfg.APIBaseURL},
		{"token_url", s.TokenURL, "", &cfg.TokenURL},
		{"certs_url", s.CertsURL, c.opts.CertsURL, &cfg.CertsURL},
		{"oidc_certs_url", s.OIDCCertsURL, c.opts.OIDCCertsURL, &cfg.OIDCCertsURL},
	} {
		if u.raw == "" {
			*u.dst = u.def
			continue
		}
		if *u.dst, err = c.opts.APIBasePolicy.Check("google_chat settings "+u.name, u.raw); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

// NewInbound validates the account's configuration and returns its webhook
// handler.
func (c *Channel) NewInbound(acct channels.Account) (channels.Inbound, error) {
	cfg, err := c.ParseConfig(acct)
	if err != nil {
		return nil, err
	}
	if _, err := c.Grant(acct); err != nil {
		return nil, err
	}
	return &inbound{cfg: cfg, keys: c.keys}, nil
}

// NewOutbound validates the account's configuration for sending and
// returns its sender: the account's credentials must hold a
// service-account key, and its tokens come from acct.Tokens.
func (c *Channel) NewOutbound(acct channels.Account) (channels.Outbound, error) {
	cfg, err := c.ParseConfig(acct)
	if err != nil {
		return nil, err
	}
	g, err := c.Grant(acct)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, invalidf("credentials: a service-account key (client_email, private_key) is required to send")
	}
	tokens := acct.Tokens
	if tokens == nil {
		// The configuration is only being validated.
		tokens = noRenewal{}
	}
	return &outbound{apiBase: cfg.APIBaseURL, client: c.opts.HTTPClient, tokens: tokens}, nil
}

// noRenewal is the TokenSource of an adapter built without MIO's token
// engine: every send fails.
type noRenewal struct{}

var errNoRenewal = errors.New("the service-account key's tokens are not renewed here (no token engine)")

func (noRenewal) Token(context.Context) (string, error) {
	return "", channels.Permanent(opSend, errNoRenewal)
}

func (noRenewal) Renew(context.Context, string) (string, error) {
	return "", channels.Permanent(opSend, errNoRenewal)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: google_chat: %s", channels.ErrInvalidConfig, fmt.Sprintf(format, args...))
}
