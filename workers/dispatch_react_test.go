package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// TestDispatchReactions: a reaction rides the outbox to the channel's
// Reactor (Slack reactions.add, Telegram setMessageReaction, Discord PUT
// .../reactions/{emoji}/@me) once, after the message queued before it in
// the conversation; on a channel without reactions it is a dead letter
// naming the capability.
func TestDispatchReactions(t *testing.T) {
	t.Parallel()
	b := newOutBundle(t, outOpts{})
	svc := outbox.New(b.env.Pool, b.clients[0])
	react := func(t *testing.T, channel, conv, msgID, emoji string) uuid.UUID {
		sent, err := svc.React(context.Background(), b.tenant, &envelope.ReactionCommand{
			AccountID: b.accounts[channel], ConversationID: conv, MessageID: msgID, Emoji: emoji})
		require.NoError(t, err)
		return sent.ID
	}
	for i, tc := range []struct{ channel, msgID, emoji string }{
		{"slack", "1700000000.000100", "thumbsup"},
		{"telegram", "77", "👍"},
		{"discord", "1240183690000000000", "👍"},
	} {
		t.Run(tc.channel, func(t *testing.T) {
			conv := fmt.Sprintf("70000000000000000%d", i)
			msg := b.send(t, tc.channel, conv, "before", nil)
			id := react(t, tc.channel, conv, tc.msgID, tc.emoji)
			b.waitTerminal(t, []uuid.UUID{msg, id}, 30*time.Second)
			o, ev := b.get(t, id)
			require.Equal(t, db.HandoffHandedOff, o.HandoffState, timeline(ev))
			require.Equal(t, tc.msgID, o.ProviderMessageID)
			var seq []call
			for _, c := range b.fake.Calls() {
				if c.Channel == tc.channel && c.Conversation == conv {
					seq = append(seq, c)
				}
			}
			require.Len(t, seq, 2)
			require.Equal(t, "send", seq[0].Op)
			require.Equal(t, call{Channel: tc.channel, Op: "react", Conversation: conv, Text: tc.emoji, EditID: tc.msgID},
				call{Channel: seq[1].Channel, Op: seq[1].Op, Conversation: seq[1].Conversation, Text: seq[1].Text, EditID: seq[1].EditID})
		})
	}
	t.Run("zoho_cliq", func(t *testing.T) {
		id := react(t, "zoho_cliq", "chat-1", "m-1", "👍")
		b.waitTerminal(t, []uuid.UUID{id}, 30*time.Second)
		o, _ := b.get(t, id)
		require.Equal(t, db.HandoffDead, o.HandoffState)
		require.Contains(t, o.LastError, "no reactions capability")
	})
}
