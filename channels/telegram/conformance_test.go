package telegram

import (
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	channelstest.Run(t, channelstest.Harness{
		Channel: New(Options{}),
		Account: channels.Account{WebhookSecret: testSecret},
		Sign:    tokenWith(testSecret),
		Forge:   tokenWith("another_bots_secret"),
		// A static secret token: no signature over the body, no timestamp.
		Fixtures: channelstest.ReadFixtures(t, "testdata"),
	})
}

// tokenWith authenticates a request as Telegram does, with secret as the
// secret token.
func tokenWith(secret string) func(testing.TB, *channels.Request) {
	return func(_ testing.TB, req *channels.Request) { req.Header.Set(SecretTokenHeader, secret) }
}
