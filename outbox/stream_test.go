package outbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// openStream opens a stream of tenant a with start as its text.
func (b *testBundle) openStream(t *testing.T, start string) uuid.UUID {
	t.Helper()
	cmd := b.a.cmd(uuid.NewString())
	cmd.Text, cmd.Stream = start, true
	sent, err := b.svc.Send(t.Context(), b.a.id, cmd)
	require.NoError(t, err)
	return sent.ID
}

func TestStreamAppendSeq(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.openStream(t, "")

	require.NoError(t, b.svc.Append(ctx, b.a.id, id, 1, "Hel"))
	require.NoError(t, b.svc.Append(ctx, b.a.id, id, 2, "lo"))
	require.NoError(t, b.svc.Append(ctx, b.a.id, id, 2, "lo"), "a repeated seq is a no-op")
	require.NoError(t, b.svc.Append(ctx, b.a.id, id, 1, "Hel"), "an older seq too")
	var seqErr *outbox.StreamSeqError
	err := b.svc.Append(ctx, b.a.id, id, 4, "!")
	require.ErrorAs(t, err, &seqErr, "a gap")
	require.Equal(t, 3, seqErr.Expected)
	require.NoError(t, b.svc.Append(ctx, b.a.id, id, 3, ", world"))

	o, _, err := b.svc.Get(ctx, b.a.id, id)
	require.NoError(t, err)
	require.Equal(t, "Hello, world", o.Text)
	require.Equal(t, 3, *o.StreamSeq)
	require.Nil(t, o.StreamFinishedAt)
	v := outbox.ViewOf(o, nil)
	require.Nil(t, v.EditOf, "a stream is not shown as an edit of itself")
	require.Equal(t, &outbox.StreamView{Seq: 3}, v.Stream)
}

func TestStreamFinish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	t.Run("keeps the appended text", func(t *testing.T) {
		id := b.openStream(t, "Thinking")
		require.NoError(t, b.svc.Append(ctx, b.a.id, id, 1, "…"))
		var seqErr *outbox.StreamSeqError
		require.ErrorAs(t, b.svc.FinishStream(ctx, b.a.id, id, outbox.Finish{Seq: 2}), &seqErr,
			"a finish naming an append never taken")
		require.Equal(t, 1, seqErr.Expected)
		require.NoError(t, b.svc.FinishStream(ctx, b.a.id, id, outbox.Finish{Seq: 1}))
		require.NoError(t, b.svc.FinishStream(ctx, b.a.id, id, outbox.Finish{Seq: 1}), "a retried finish")
		require.ErrorIs(t, b.svc.Append(ctx, b.a.id, id, 2, "late"), outbox.ErrStreamFinished)
		require.NoError(t, b.svc.Append(ctx, b.a.id, id, 1, "…"), "a retry of an append taken before the finish")
		o, events, err := b.svc.Get(ctx, b.a.id, id)
		require.NoError(t, err)
		require.Equal(t, "Thinking…", o.Text)
		require.NotNil(t, o.StreamFinishedAt)
		require.Equal(t, "stream_finished", events[len(events)-1].Event)
	})
	t.Run("text and rich content replace", func(t *testing.T) {
		id := b.openStream(t, "")
		require.NoError(t, b.svc.Append(ctx, b.a.id, id, 1, "draft"))
		final := "the complete answer"
		require.NoError(t, b.svc.FinishStream(ctx, b.a.id, id, outbox.Finish{Text: &final,
			RichContent: json.RawMessage(`{"title":"Answer"}`)}))
		o, _, err := b.svc.Get(ctx, b.a.id, id)
		require.NoError(t, err)
		require.Equal(t, final, o.Text)
		require.JSONEq(t, `{"title":"Answer"}`, string(o.RichContent))
	})
}

func TestStreamRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.openStream(t, "")
	plain, err := b.svc.Send(ctx, b.a.id, b.a.cmd(uuid.NewString()))
	require.NoError(t, err)
	var invalid *outbox.ValidationError

	require.ErrorIs(t, b.svc.Append(ctx, b.b.id, id, 1, "x"), outbox.ErrNotFound, "another tenant's stream is not seen")
	require.ErrorIs(t, b.svc.FinishStream(ctx, b.b.id, id, outbox.Finish{}), outbox.ErrNotFound)
	require.ErrorIs(t, b.svc.Append(ctx, b.a.id, uuid.New(), 1, "x"), outbox.ErrNotFound)
	require.ErrorIs(t, b.svc.Append(ctx, b.a.id, plain.ID, 1, "x"), outbox.ErrNotStream)
	require.ErrorIs(t, b.svc.FinishStream(ctx, b.a.id, plain.ID, outbox.Finish{}), outbox.ErrNotStream)
	require.ErrorAs(t, b.svc.Append(ctx, b.a.id, id, 0, "x"), &invalid, "seq counts from 1")
	require.ErrorAs(t, b.svc.Append(ctx, b.a.id, id, 1, "\xff"), &invalid)
	var tooLarge *outbox.TooLargeError
	require.ErrorAs(t, b.svc.Append(ctx, b.a.id, id, 1, strings.Repeat("x", 64<<10+1)), &tooLarge)
	require.Equal(t, "text_delta", tooLarge.Field)
	require.NoError(t, b.svc.Append(ctx, b.a.id, id, 1, strings.Repeat("x", 64<<10-1)))
	require.ErrorAs(t, b.svc.Append(ctx, b.a.id, id, 2, "yy"), &tooLarge, "the text would exceed the limit")
	require.True(t, tooLarge.Total)
	require.ErrorAs(t, b.svc.FinishStream(ctx, b.a.id, id, outbox.Finish{RichContent: json.RawMessage(`{"x":1}`)}), &invalid)

	for name, edit := range map[string]func(c *envelope.SendCommand){
		"edit_of": func(c *envelope.SendCommand) { c.EditOf = &plain.ID },
		"attachments": func(c *envelope.SendCommand) {
			c.Attachments = []envelope.SendAttachment{{URL: "https://x.test/a.png"}}
		},
		"rich_content": func(c *envelope.SendCommand) { c.RichContent = json.RawMessage(`{"title":"t"}`) },
	} {
		cmd := b.a.cmd(uuid.NewString())
		cmd.Stream = true
		edit(cmd)
		_, err := b.svc.Send(ctx, b.a.id, cmd)
		require.ErrorAs(t, err, &invalid, name)
		require.Equal(t, name, invalid.Field)
	}

	var others int
	require.NoError(t, b.owner.QueryRow(ctx, `SELECT count(*) FROM mio.outbox WHERE tenant_id = $1`, b.b.id).Scan(&others))
	require.Zero(t, others, "nothing written in the other tenant")
}
