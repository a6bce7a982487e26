package teams

import (
	"testing"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	// Tokens valid from 5 minutes before to 5 minutes after signing, with
	// the 5-minute clock skew: accepted within 10 minutes either side.
	life := channelstest.TokenOptions{Lifetime: 5 * time.Minute}
	forged := life
	forged.Forged = true
	channelstest.Run(t, channelstest.Harness{
		Channel: newTestChannel(),
		Account: fakeAccount(fake),
		Sign: func(t testing.TB, req *channels.Request) {
			req.Header.Set("Authorization", fake.Sign(t, req.Body, req.Now, life))
		},
		Forge: func(t testing.TB, req *channels.Request) {
			req.Header.Set("Authorization", fake.Sign(t, req.Body, req.Now, forged))
		},
		// The token covers the activity's serviceUrl, not its body.
		Tolerance: 5*time.Minute + ClockSkew,
		Fixtures:  channelstest.ReadFixtures(t, "testdata"),
	})
}

// newTestChannel is an adapter that may reach local fakes over http.
func newTestChannel() *Channel {
	return New(Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
}

// fakeAccount is an account of fake's bot.
func fakeAccount(fake *channelstest.FakeTeams) channels.Account {
	return channels.Account{ExternalID: fake.AppID, Settings: fake.Settings(), Credentials: fake.Credentials()}
}
