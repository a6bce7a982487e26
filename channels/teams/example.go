package teams

import (
	"encoding/json"

	"github.com/miohq/mio/channels"
)

// ExampleAccount returns a valid account of this channel
// (channels.Exampler).
func (c *Channel) ExampleAccount() channels.Account {
	return channels.Account{ExternalID: "00000000-0000-0000-0000-0000000000a1",
		Settings: json.RawMessage(`{"api_base_url": "https://smba.example/teams", "token_url": "https://login.example/token",
			"openid_metadata_url": "https://login.example/openid"}`),
		Credentials: json.RawMessage(`{"app_id": "00000000-0000-0000-0000-0000000000a1", "client_secret": "s3cret", "tenant_id": "contoso.onmicrosoft.com"}`)}
}
