package outbox_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// TestReact: a reaction is an outbox row with its event and dispatch job,
// read back as kind reaction; its key is idempotent like a send's, and
// without a key each call is a new reaction.
func TestReact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cmd := &envelope.ReactionCommand{IdempotencyKey: "r-1", AccountID: b.a.account, ConversationID: "c-1", MessageID: "1700.01", Emoji: "👍"}
	first, err := b.svc.React(t.Context(), b.a.id, cmd)
	require.NoError(t, err)
	require.Equal(t, &outbox.Sent{ID: first.ID, HandoffState: db.HandoffQueued}, first)
	require.Equal(t, [3]int{1, 1, 1}, b.counts(t), "row, first event and dispatch job")

	v, _, err := b.svc.Get(t.Context(), b.a.id, first.ID)
	require.NoError(t, err)
	view := outbox.ViewOf(v, nil)
	require.Equal(t, envelope.KindReaction, view.Kind)
	require.Equal(t, &envelope.ReactionSend{MessageID: "1700.01", Emoji: "👍"}, view.Reaction)
	require.Nil(t, view.RichContent)
	require.Equal(t, "", view.Text)

	again, err := b.svc.React(t.Context(), b.a.id, cmd)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.ID, again.ID)
	remove := *cmd
	remove.Remove = true
	_, err = b.svc.React(t.Context(), b.a.id, &remove)
	require.ErrorIs(t, err, outbox.ErrKeyConflict)

	keyless := *cmd
	keyless.IdempotencyKey = ""
	one, err := b.svc.React(t.Context(), b.a.id, &keyless)
	require.NoError(t, err)
	two, err := b.svc.React(t.Context(), b.a.id, &keyless)
	require.NoError(t, err)
	require.NotEqual(t, one.ID, two.ID)
	require.Equal(t, [3]int{3, 3, 3}, b.counts(t))
}

func TestReactValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	valid := func() *envelope.ReactionCommand {
		return &envelope.ReactionCommand{AccountID: b.a.account, ConversationID: "c-1", MessageID: "m-1", Emoji: "👍"}
	}
	for _, c := range []struct {
		name   string
		change func(*envelope.ReactionCommand)
		field  string
		is     error
	}{
		{"no account", func(r *envelope.ReactionCommand) { r.AccountID = uuid.Nil }, "account_id", nil},
		{"no conversation", func(r *envelope.ReactionCommand) { r.ConversationID = " " }, "conversation_id", nil},
		{"no message", func(r *envelope.ReactionCommand) { r.MessageID = "" }, "message_id", nil},
		{"no emoji", func(r *envelope.ReactionCommand) { r.Emoji = "" }, "emoji", nil},
		{"long emoji", func(r *envelope.ReactionCommand) { r.Emoji = strings.Repeat("x", 129) }, "emoji", nil},
		{"control character", func(r *envelope.ReactionCommand) { r.MessageID = "m\n" }, "message_id", nil},
		{"unknown account", func(r *envelope.ReactionCommand) { r.AccountID = uuid.New() }, "account_id", outbox.ErrAccountNotFound},
		{"disabled account", func(r *envelope.ReactionCommand) { r.AccountID = b.a.disabled }, "account_id", outbox.ErrAccountDisabled},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := valid()
			c.change(r)
			_, err := b.svc.React(t.Context(), b.a.id, r)
			var ve *outbox.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, c.field, ve.Field)
			if c.is != nil {
				require.ErrorIs(t, err, c.is)
			}
		})
	}
	require.Equal(t, [3]int{0, 0, 0}, b.counts(t), "nothing written")
}
