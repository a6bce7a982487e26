package slack

import (
	"encoding/json"

	"github.com/miohq/mio/channels"
)

// ExampleAccount returns a valid account of this channel
// (channels.Exampler).
func (c *Channel) ExampleAccount() channels.Account {
	return channels.Account{WebhookSecret: "signing-secret",
		Settings:    json.RawMessage(`{"api_base_url": "https://slack.example/api"}`),
		Credentials: json.RawMessage(`{"bot_token": "xoxb-1"}`)}
}
