package discord

import (
	"encoding/json"

	"github.com/miohq/mio/channels"
)

// ExampleAccount returns a valid account of this channel
// (channels.Exampler).
func (c *Channel) ExampleAccount() channels.Account {
	return channels.Account{ // Gateway only: no application public key
		Settings: json.RawMessage(`{"application_id": "123456789012345678", "gateway": true, "gateway_intents": 512,
			"gateway_url": "wss://gateway.example", "api_base_url": "https://discord.example/api"}`),
		Credentials: json.RawMessage(`{"bot_token": "bot-token"}`)}
}
