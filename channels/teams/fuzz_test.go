package teams

import (
	"net/http"
	"testing"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

func FuzzParse(f *testing.F) {
	channelstest.SeedBodies(f, func(b []byte) { f.Add("application/json", b) })
	f.Add("", []byte(`{"type":"message","id":"1","channelId":"msteams","conversation":{"id":";messageid="},"from":{"id":"u"},"attachments":[{"contentType":"IMAGE/PNG","contentUrl":"https://x"},{"contentType":"application/vnd.microsoft.teams.file.download.info","content":"x"}]}`))
	f.Add("application/json", []byte(`{"type":"message","id":"1","channelId":"msteams","conversation":{"id":"c"},"from":{"id":"u"},"recipient":{"id":"b"},"text":"<at>b</at>","entities":[{"type":"mention","text":"","mentioned":{"id":"b"}},{"type":"mention","text":"<at>b</at>","mentioned":null}]}`))
	f.Add("text/plain", []byte(`{}`))
	in := newFuzzInbound(f)
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		p := channelstest.CheckParse(t, envelope.ChannelTeams, in, &channels.Request{Header: h, Body: body})
		if p == nil {
			return
		}
		for _, m := range p.Messages {
			if m.Conversation.ID == "" || m.SourceMessageID == "" {
				t.Fatalf("message without conversation or dedup key %+v", m)
			}
			for _, a := range m.Attachments {
				if !channels.IsHTTPURL(a.Source.URL) {
					t.Fatalf("attachment without an http URL %+v", a)
				}
			}
		}
	})
}

// FuzzVerify: whatever the header and body, Verify answers nil or
// ErrUnauthorized, and accepts only the fake's token for the body's
// serviceUrl (checked for the fixtures it was signed for).
func FuzzVerify(f *testing.F) {
	fake := channelstest.NewFakeTeams(f, time.Hour)
	in := newInbound2(f, fake)
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, fx := range channelstest.ReadFixtures(f, "testdata") {
		f.Add(fake.Sign(f, fx.Body, now, channelstest.TokenOptions{}), fx.Body)
		f.Add(fake.Sign(f, fx.Body, now, channelstest.TokenOptions{Audience: "x"}), fx.Body)
	}
	f.Add("Bearer e30.e30.", []byte(`{"serviceUrl":"https://smba.trafficmanager.net/","channelId":"msteams"}`))
	f.Add("Bearer ", []byte(`{}`))
	f.Fuzz(func(t *testing.T, authorization string, body []byte) {
		h := http.Header{}
		h.Set("Authorization", authorization)
		channelstest.CheckVerify(t, in, &channels.Request{Header: h, Body: body, Now: now})
	})
}

func newFuzzInbound(f *testing.F) channels.Inbound {
	in, err := New(Options{}).NewInbound(channels.Account{Credentials: []byte(`{"app_id":"b"}`)})
	if err != nil {
		f.Fatal(err)
	}
	return in
}

func newInbound2(f *testing.F, fake *channelstest.FakeTeams) channels.Inbound {
	in, err := newTestChannel().NewInbound(fakeAccount(fake))
	if err != nil {
		f.Fatal(err)
	}
	return in
}
