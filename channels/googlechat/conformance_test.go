package googlechat

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

// Test audiences.
const (
	testProject  = "123456789012"
	testEndpoint = "https://mio.example/webhooks/google_chat/0b7d5c9e-1f4e-4a57-9d0c-2f1b8c6e0a11"
)

// signAge is how old a test token is when a request is signed: Chat's
// tokens live an hour, so a token half-way through its life is valid
// from 30 minutes (plus Leeway) before the request to 30 minutes (plus
// Leeway) after it — the suite's Tolerance both ways.
const signAge = 30 * time.Minute

func TestConformance(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	forger := channelstest.NewRSAKey(t)
	fixtures := channelstest.ReadFixtures(t, "testdata")
	for _, tc := range []struct {
		name      string
		sign      func(t testing.TB, at time.Time) string
		forge     func(t testing.TB, at time.Time) string
		misdirect func(t testing.TB, at time.Time) string
	}{
		{name: "project number",
			sign: func(t testing.TB, at time.Time) string { return f.ChatToken(t, testProject, at) },
			forge: func(t testing.TB, at time.Time) string {
				return channelstest.SignGoogleToken(t, forger, channelstest.FakeChatKeyID, jwt.MapClaims{"iss": ChatIssuer,
					"aud": testProject, "iat": at.Unix(), "exp": at.Add(time.Hour).Unix()})
			},
			misdirect: func(t testing.TB, at time.Time) string { return f.ChatToken(t, "999999999999", at) }},
		{name: "endpoint URL",
			sign: func(t testing.TB, at time.Time) string { return f.OIDCToken(t, testEndpoint, at) },
			forge: func(t testing.TB, at time.Time) string {
				return channelstest.SignGoogleToken(t, forger, "made-up-key", jwt.MapClaims{"iss": OIDCIssuer, "aud": testEndpoint,
					"email": ChatIssuer, "email_verified": true, "iat": at.Unix(), "exp": at.Add(time.Hour).Unix()})
			},
			misdirect: func(t testing.TB, at time.Time) string { return f.OIDCToken(t, "https://other.example/chat", at) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			channelstest.Run(t, channelstest.Harness{
				Channel: testChannel(),
				Account: channels.Account{ExternalID: testProject, Settings: f.Settings(testProject, testEndpoint)},
				Sign: func(t testing.TB, req *channels.Request) {
					req.Header.Set("Authorization", "Bearer "+tc.sign(t, req.Now.Add(-signAge)))
				},
				Forge: func(t testing.TB, req *channels.Request) {
					req.Header.Set("Authorization", "Bearer "+tc.forge(t, req.Now.Add(-signAge)))
				},
				Misdirect: func(t testing.TB, req *channels.Request) {
					req.Header.Set("Authorization", "Bearer "+tc.misdirect(t, req.Now.Add(-signAge)))
				},
				// The bearer token does not cover the body.
				Tolerance: signAge + Leeway,
				Fixtures:  fixtures,
			})
		})
	}
}

// testChannel is an adapter that may call the fake over http on
// 127.0.0.1.
func testChannel() *Channel {
	return New(Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
}
