package discord

import (
	"crypto/ed25519"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	pub, priv := newKey(t)
	_, other := newKey(t)
	channelstest.Run(t, channelstest.Harness{
		Channel:   New(Options{}),
		Account:   channels.Account{WebhookSecret: hex.EncodeToString(pub)},
		Sign:      signWith(priv),
		Forge:     signWith(other),
		SignsBody: true,
		Tolerance: DefaultTimestampTolerance,
		Fixtures:  channelstest.ReadFixtures(t, "testdata"),
	})
}

// signWith signs a request as Discord does with the application key priv,
// at the request's Now.
func signWith(priv ed25519.PrivateKey) func(testing.TB, *channels.Request) {
	return func(_ testing.TB, req *channels.Request) {
		ts := strconv.FormatInt(req.Now.Unix(), 10)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, hex.EncodeToString(ed25519.Sign(priv, append([]byte(ts), req.Body...))))
	}
}
