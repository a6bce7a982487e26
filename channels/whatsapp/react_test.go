package whatsapp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
)

// TestReact: a reaction is a reaction message on the user's wamid;
// removing it sends an empty emoji; the result is the reaction's wamid.
func TestReact(t *testing.T) {
	t.Parallel()
	fake := newFakeGraph(t, accepted("wamid.REACT"))
	r := newTestOutbound(t, fake.srv.URL, nil).(channels.Reactor)
	msg := textMessage("")
	msg.Reaction = &channels.OutboundReaction{MessageID: "wamid.IN", Emoji: "👍"}
	res, err := r.React(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, "wamid.REACT", res.ProviderMessageID)
	msg.Reaction.Remove = true
	_, err = r.React(context.Background(), msg)
	require.NoError(t, err)
	calls := fake.recorded()
	require.Len(t, calls, 2)
	require.JSONEq(t, `{"messaging_product":"whatsapp","to":"`+msg.ConversationID+`","type":"reaction","reaction":{"message_id":"wamid.IN","emoji":"👍"}}`, string(calls[0].Raw))
	require.JSONEq(t, `{"messaging_product":"whatsapp","to":"`+msg.ConversationID+`","type":"reaction","reaction":{"message_id":"wamid.IN","emoji":""}}`, string(calls[1].Raw))
}
