package zohocliq

import (
	"crypto/rsa"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	a, b := testKeys(t)
	fixtures := channelstest.ReadFixtures(t, "testdata")
	t.Run("rsa", func(t *testing.T) {
		t.Parallel()
		channelstest.Run(t, channelstest.Harness{
			Channel:   New(Options{}),
			Account:   channels.Account{Settings: settings(t, map[string]any{"public_key_pem": pkixPEM(t, &a.PublicKey)})},
			Sign:      signWith(a),
			Forge:     signWith(b),
			SignsBody: true,
			// Cliq signs no timestamp.
			Fixtures: fixtures,
		})
	})
	t.Run("token", func(t *testing.T) {
		t.Parallel()
		channelstest.Run(t, channelstest.Harness{
			Channel: New(Options{}),
			Account: channels.Account{WebhookSecret: "cliq-shared-token"},
			Sign:    tokenWith("cliq-shared-token"),
			Forge:   tokenWith("another-token"),
			// A static shared token: no signature over the body.
			Fixtures: fixtures,
		})
	})
}

// signWith signs a request's body as Cliq does (X-Cliq-Signature) with key.
func signWith(key *rsa.PrivateKey) func(testing.TB, *channels.Request) {
	return func(t testing.TB, req *channels.Request) { req.Header.Set(HeaderSignature, sign(t, key, req.Body)) }
}

// tokenWith authenticates a request with the shared token in X-Mio-Token.
func tokenWith(token string) func(testing.TB, *channels.Request) {
	return func(_ testing.TB, req *channels.Request) { req.Header.Set(HeaderToken, token) }
}
