package whatsapp

import (
	"encoding/json"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	channelstest.Run(t, channelstest.Harness{
		Channel: New(Options{}),
		// The fixtures' business phone number.
		Account: channels.Account{
			Settings:      json.RawMessage(`{"phone_number_id":"106540352242922"}`),
			Credentials:   json.RawMessage(`{"verify_token":"` + testVerifyToken + `"}`),
			WebhookSecret: testAppSecret,
		},
		Sign:      signWith(testAppSecret),
		Forge:     signWith("another-apps-secret"),
		SignsBody: true,
		// Meta signs no timestamp.
		Fixtures: channelstest.ReadFixtures(t, "testdata"),
	})
}

// signWith signs a request as Meta does with the App Secret secret.
func signWith(secret string) func(testing.TB, *channels.Request) {
	return func(_ testing.TB, req *channels.Request) { req.Header.Set(SignatureHeader, Sign(secret, req.Body)) }
}
