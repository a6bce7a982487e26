package teams

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
)

// TestReact: a reaction is a PUT of the activity's reactions/{type} (an
// emoji of the classic six becomes its type, other values pass as Teams
// reaction ids), taking it back a DELETE; the result names the activity.
func TestReact(t *testing.T) {
	t.Parallel()
	fake := channelstest.NewFakeTeams(t, time.Hour)
	o, _ := newSender(t, fake)
	ctx := context.Background()
	react := func(emoji string, remove bool) error {
		res, err := o.React(ctx, &channels.OutboundMessage{ConversationID: testConv,
			Reaction: &channels.OutboundReaction{MessageID: "1714564980123", Emoji: emoji, Remove: remove}})
		if err == nil {
			require.Equal(t, "1714564980123", res.ProviderMessageID)
		}
		return err
	}
	require.NoError(t, react("👍", false))
	require.NoError(t, react("1f440_eyes", false))
	require.NoError(t, react("heart", true))

	const base = "/v3/conversations/19:7e8d0b3c2a1f4e6b9d5c8a7f6e5d4c3b@thread.tacv2/activities/1714564980123/reactions/"
	var got []string
	for _, c := range fake.Calls() {
		got = append(got, c.Method+" "+c.Path)
	}
	require.Equal(t, []string{http.MethodPut + " " + base + "like", http.MethodPut + " " + base + "1f440_eyes",
		http.MethodDelete + " " + base + "heart"}, got)

	require.Equal(t, "permanent", channelstest.ErrorKind(react("", false)))
	_, err := o.React(ctx, &channels.OutboundMessage{ConversationID: testConv})
	require.Equal(t, "permanent", channelstest.ErrorKind(err))
}
