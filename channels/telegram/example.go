package telegram

import (
	"encoding/json"

	"github.com/miohq/mio/channels"
)

// ExampleAccount returns a valid account of this channel
// (channels.Exampler).
func (c *Channel) ExampleAccount() channels.Account {
	return channels.Account{WebhookSecret: "secret_token",
		Settings:    json.RawMessage(`{"mode": "webhook", "delete_webhook": false, "api_base_url": "https://telegram.example"}`),
		Credentials: json.RawMessage(`{"bot_token": "123456:ABCdef"}`)}
}
