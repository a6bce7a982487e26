package slack

import (
	"context"
	"testing"

	"github.com/miohq/mio/channels/channelstest"
)

// BenchmarkParse is the webhook path's parse of a message event (the
// kind nearly every delivery is): go test -bench Parse ./channels/slack.
func BenchmarkParse(b *testing.B) {
	in := newTestInbound(b, nil, "")
	req := signedRequest(channelstest.ReadFixture(b, "message.json"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := in.Parse(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
