package webhook

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	channelstest.Run(t, channelstest.Harness{
		Channel:   New(Options{}),
		Account:   channels.Account{WebhookSecret: testSecret},
		Sign:      signWith(testSecret),
		Forge:     signWith("whsec_Zm9yZ2VkLWZvcmdlZC1mb3JnZWQtZm9yZ2VkLWZvcmdlZA=="),
		SignsBody: true,
		Tolerance: SignatureTolerance,
		Fixtures:  channelstest.ReadFixtures(t, "testdata"),
	})
}

// signWith signs a request as a Standard Webhooks sender does with secret,
// at the request's Now; webhook-id is testID unless already set (the same
// on every redelivery).
func signWith(secret string) func(testing.TB, *channels.Request) {
	return func(t testing.TB, req *channels.Request) {
		id := req.Header.Get(HeaderID)
		if id == "" {
			id = testID
			req.Header.Set(HeaderID, id)
		}
		sig, err := Sign(secret, id, req.Now, req.Body)
		require.NoError(t, err)
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(req.Now.Unix(), 10))
		req.Header.Set(HeaderSignature, sig)
	}
}
