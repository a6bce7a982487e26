package zohocliq

import (
	"encoding/json"

	"github.com/miohq/mio/channels"
)

// ExampleAccount returns a valid account of this channel
// (channels.Exampler).
func (c *Channel) ExampleAccount() channels.Account {
	return channels.Account{WebhookSecret: "shared-token",
		Settings:    json.RawMessage(`{"mode": "token", "message_handlers": ["message"], "api_base_url": "https://cliq.example"}`),
		Credentials: json.RawMessage(`{"access_token": "1000.abc"}`)}
}
