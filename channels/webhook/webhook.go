// Package webhook is MIO's generic channel: any system can deliver messages
// to MIO and receive MIO's replies as Standard Webhooks
// (https://www.standardwebhooks.com): a JSON body {type, timestamp, data}
// signed with HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}"
// with a shared whsec_ secret. The body shape is fixed in docs/contract.md §3.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// DefaultTimeout bounds one outbound delivery when Options.HTTPClient is
// nil (Standard Webhooks senders use 15–30 s).
const DefaultTimeout = 15 * time.Second

// Options configures the webhook channel. The zero value is ready to use.
type Options struct {
	// HTTPClient delivers outbound webhooks (its transport is shared). A
	// copy is used whose CheckRedirect never follows a redirect (a 3xx
	// answer is a failed delivery) and whose Timeout, when unset, is
	// DefaultTimeout. Default: a client with the default transport.
	HTTPClient *http.Client
	// Now stamps outbound deliveries (webhook-timestamp and the body's
	// timestamp). Default time.Now.
	Now func() time.Time
}

// Channel is the generic Standard Webhooks adapter.
type Channel struct {
	client *http.Client
	now    func() time.Time
}

var _ channels.OutboundChannel = (*Channel)(nil)

// New returns the webhook channel, applying defaults to opts.
func New(opts Options) *Channel {
	client := &http.Client{Timeout: DefaultTimeout}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		if c.Timeout == 0 {
			c.Timeout = DefaultTimeout
		}
		client = &c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Channel{client: client, now: opts.Now}
}

// Type returns envelope.ChannelWebhook.
func (c *Channel) Type() string { return envelope.ChannelWebhook }

// Info describes the generic webhook channel: edits (message.updated),
// threads, attachments, rich content; no delivery receipts and no send
// limit.
func (c *Channel) Info() channels.Info {
	return channels.Info{
		DisplayName: "Standard Webhooks",
		Outbound:    (*outbound)(nil),
		Threads:     true, RichContent: true,
		// The receiver is the caller's own service: no platform limit.
		StreamEditInterval: 250 * time.Millisecond,
		Settings: []channels.Field{
			{Name: "endpoint_url", Type: channels.TypeString, Required: true, Description: "Where outbound messages are POSTed (an absolute http(s) URL)."},
		},
		Credentials: []channels.Field{
			{Name: "previous_secrets", Type: channels.TypeArray, Secret: true, Description: "Older whsec_ secrets still accepted inbound during a rotation."},
		},
		Setup: channels.Setup{
			SettingsExample: `{"endpoint_url":"https://your-app.example/mio"}`,
			SecretLabel:     "Signing secret (whsec_…, base64 after the prefix)",
			Steps: []string{
				"Configure the sender to POST Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) to the URL below.",
				"Give the sender the same signing secret.",
				"Replies are POSTed to endpoint_url, signed with that secret.",
			}},
	}
}

// NewInbound validates acct's configuration and returns its webhook handler.
func (c *Channel) NewInbound(acct channels.Account) (channels.Inbound, error) {
	cfg, err := newConfig(acct)
	if err != nil {
		return nil, err
	}
	return &inbound{keys: cfg.keys}, nil
}

// Config is one webhook account's configuration, decoded from the account:
//
//   - webhook secret (Account.WebhookSecret): the current Standard Webhooks
//     secret, "whsec_" + base64 of 24–64 random bytes. Required. Outbound
//     deliveries are signed with it.
//   - credentials JSON: {"previous_secrets": ["whsec_...", ...]}. Optional;
//     during a rotation a request signed with any of these secrets also
//     verifies. Other keys are ignored.
//   - settings JSON: {"endpoint_url": "https://..."}. endpoint_url is
//     where outbound messages are POSTed, an absolute http(s) URL; required
//     to send, unused inbound. When present settings must be a JSON object.
type Config struct {
	// EndpointURL receives outbound deliveries (settings endpoint_url).
	EndpointURL string `json:"-"`
	// Secret is the current whsec_ secret (the webhook secret).
	Secret string `json:"-"`
	// PreviousSecrets are older whsec_ secrets still accepted inbound.
	PreviousSecrets []string `json:"previous_secrets"`

	keys [][]byte // decoded Secret then PreviousSecrets
}

// newConfig decodes and validates acct into a Config.
func newConfig(acct channels.Account) (Config, error) {
	var cfg Config
	if err := channels.DecodeObject("webhook settings", acct.Settings, &struct{}{}); err != nil {
		return Config{}, err
	}
	if err := channels.DecodeObject("webhook credentials", acct.Credentials, &cfg); err != nil {
		return Config{}, err
	}
	cfg.Secret = acct.WebhookSecret
	if cfg.Secret == "" {
		return Config{}, fmt.Errorf("%w: webhook: the whsec_ secret (webhook secret) is required", channels.ErrInvalidConfig)
	}
	for i, s := range append([]string{cfg.Secret}, cfg.PreviousSecrets...) {
		key, err := decodeSecret(s)
		if err != nil {
			what := "webhook secret"
			if i > 0 {
				what = fmt.Sprintf("previous_secrets[%d]", i-1)
			}
			return Config{}, fmt.Errorf("%w: webhook: %s: %v", channels.ErrInvalidConfig, what, err)
		}
		cfg.keys = append(cfg.keys, key)
	}
	return cfg, nil
}

// NewOutbound validates acct's configuration for sending (the whsec_
// secret and settings endpoint_url) and returns its sender, which also
// edits (message.updated).
func (c *Channel) NewOutbound(acct channels.Account) (channels.Outbound, error) {
	cfg, err := newOutboundConfig(acct)
	if err != nil {
		return nil, err
	}
	return &outbound{client: c.client, now: c.now, endpoint: cfg.EndpointURL, key: cfg.keys[0]}, nil
}

// newOutboundConfig decodes acct into a Config for sending: newConfig's
// checks plus a required endpoint_url. Errors never repeat the URL, which
// may carry credentials.
func newOutboundConfig(acct channels.Account) (Config, error) {
	cfg, err := newConfig(acct)
	if err != nil {
		return Config{}, err
	}
	var s struct {
		EndpointURL string `json:"endpoint_url"`
	}
	if err := channels.DecodeObject("webhook settings", acct.Settings, &s); err != nil {
		return Config{}, err
	}
	if s.EndpointURL == "" {
		return Config{}, fmt.Errorf("%w: webhook: settings endpoint_url is required to send", channels.ErrInvalidConfig)
	}
	if !channels.IsHTTPURL(s.EndpointURL) {
		return Config{}, fmt.Errorf("%w: webhook: settings endpoint_url is not an absolute http(s) URL", channels.ErrInvalidConfig)
	}
	cfg.EndpointURL = s.EndpointURL
	return cfg, nil
}

// Secret sizes Standard Webhooks allows, in bytes.
const (
	minSecretBytes = 24
	maxSecretBytes = 64
)

// decodeSecret returns the HMAC key of a "whsec_<base64>" secret.
func decodeSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New(`secret must start with "whsec_"`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("secret is not valid base64 after whsec_")
	}
	if len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, fmt.Errorf("secret is %d bytes, want %d to %d", len(key), minSecretBytes, maxSecretBytes)
	}
	return key, nil
}

// Sign returns the Standard Webhooks signature ("v1,<base64>") of body
// sent with webhook-id id at ts, under a "whsec_" secret. It is what a
// sender puts in the webhook-signature header (with webhook-timestamp set
// to ts.Unix()).
func Sign(secret string, id string, ts time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", fmt.Errorf("webhook: sign: %w", err)
	}
	return signature(key, id, strconv.FormatInt(ts.Unix(), 10), body), nil
}

// signature is the webhook-signature value ("v1,<base64>") of body sent
// with webhook-id id at timestamp (Unix seconds), under a decoded key.
func signature(key []byte, id, timestamp string, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, timestamp, body))
}

// mac is HMAC-SHA256(key, id + "." + timestamp + "." + body).
func mac(key []byte, id, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + timestamp + "."))
	m.Write(body)
	return m.Sum(nil)
}
