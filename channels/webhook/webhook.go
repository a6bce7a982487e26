// Package webhook is MIO's generic channel: any system can deliver messages
// to MIO (and, later, receive MIO's replies) as Standard Webhooks
// (https://www.standardwebhooks.com): a JSON body {type, timestamp, data}
// signed with HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}"
// with a shared whsec_ secret. The body shape is fixed in DESIGN.md §3.
package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Options configures the webhook channel. It has no fields yet (inbound
// needs no outside services); the zero value is ready to use.
type Options struct{}

// Channel is the generic Standard Webhooks adapter.
type Channel struct{}

// New returns the webhook channel.
func New(Options) *Channel { return &Channel{} }

// Type returns envelope.ChannelWebhook.
func (c *Channel) Type() string { return envelope.ChannelWebhook }

// Capabilities reports edits (message.updated), threads and attachments;
// there are no delivery receipts.
func (c *Channel) Capabilities() channels.Capabilities {
	return channels.Capabilities{Edit: true, Threads: true, Attachments: true}
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
//     deliveries will be signed with it.
//   - credentials JSON: {"previous_secrets": ["whsec_...", ...]}. Optional;
//     during a rotation a request signed with any of these secrets also
//     verifies. Other keys are ignored.
//   - settings JSON: no keys yet; when present it must be a JSON object.
type Config struct {
	// Secret is the current whsec_ secret (the webhook secret).
	Secret string `json:"-"`
	// PreviousSecrets are older whsec_ secrets still accepted inbound.
	PreviousSecrets []string `json:"previous_secrets"`

	keys [][]byte // decoded Secret then PreviousSecrets
}

// newConfig decodes and validates acct into a Config.
func newConfig(acct channels.Account) (Config, error) {
	var cfg Config
	if err := decodeObject(acct.Settings, &struct{}{}); err != nil {
		return Config{}, fmt.Errorf("%w: webhook settings: %v", channels.ErrInvalidConfig, err)
	}
	if err := decodeObject(acct.Credentials, &cfg); err != nil {
		return Config{}, fmt.Errorf("%w: webhook credentials: %v", channels.ErrInvalidConfig, err)
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

// decodeObject decodes raw into v when raw holds a JSON object. Empty input
// and JSON null leave v untouched; anything else is an error.
func decodeObject(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if raw[0] != '{' {
		return errors.New("must be a JSON object")
	}
	return json.Unmarshal(raw, v)
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
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, strconv.FormatInt(ts.Unix(), 10), body)), nil
}

// mac is HMAC-SHA256(key, id + "." + timestamp + "." + body).
func mac(key []byte, id, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + timestamp + "."))
	m.Write(body)
	return m.Sum(nil)
}
