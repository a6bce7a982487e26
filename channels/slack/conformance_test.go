package slack

import (
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	channelstest.Run(t, channelstest.Harness{
		Channel:   New(Options{}),
		Account:   channels.Account{ID: uuid.New(), TenantID: uuid.New(), WebhookSecret: testSecret},
		Sign:      signWith(testSecret),
		Forge:     signWith("another-apps-signing-secret"),
		SignsBody: true,
		Forms:     true,
		Tolerance: SignatureTolerance,
		Redeliver: func(req *channels.Request) {
			req.Header.Set("X-Slack-Retry-Num", "1")
			req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
		},
		Fixtures: channelstest.ReadFixtures(t, "testdata"),
	})
}

// signWith signs a request as Slack does with secret, at the request's
// Now.
func signWith(secret string) func(testing.TB, *channels.Request) {
	return func(_ testing.TB, req *channels.Request) {
		ts := strconv.FormatInt(req.Now.Unix(), 10)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, Signature(secret, ts, req.Body))
	}
}
