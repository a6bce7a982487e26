package whatsapp

import (
	"encoding/json"

	"github.com/miohq/mio/channels"
)

// ExampleAccount returns a valid account of this channel
// (channels.Exampler).
func (c *Channel) ExampleAccount() channels.Account {
	return channels.Account{WebhookSecret: "app-secret", ExternalID: "1234",
		Settings:    json.RawMessage(`{"phone_number_id": "1234", "graph_version": "v21.0", "api_base_url": "https://graph.example"}`),
		Credentials: json.RawMessage(`{"access_token": "EAA1", "verify_token": "v"}`)}
}
