package webhook

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/miohq/mio/channels"
)

// ExampleAccount returns a valid account of this channel
// (channels.Exampler).
func (c *Channel) ExampleAccount() channels.Account {
	whsec := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	return channels.Account{WebhookSecret: whsec,
		Settings:    json.RawMessage(`{"endpoint_url": "https://app.example/mio"}`),
		Credentials: json.RawMessage(`{"previous_secrets": ["` + whsec + `"]}`)}
}
