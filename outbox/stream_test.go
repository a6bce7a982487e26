package outbox_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/groupcommit"
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

// openStreamOf opens an empty stream of tenant tt.
func (b *testBundle) openStreamOf(t *testing.T, tt testTenant) uuid.UUID {
	t.Helper()
	cmd := tt.cmd(uuid.NewString())
	cmd.Text, cmd.Stream = "", true
	sent, err := b.svc.Send(t.Context(), tt.id, cmd)
	require.NoError(t, err)
	return sent.ID
}

// TestStreamAppendsGroupCommitted: concurrent appends to several streams
// of two tenants share transactions (every append committed by the
// append group commit, in fewer transactions than appends), and every
// stream ends with exactly the concatenation of its deltas in seq order.
func TestStreamAppendsGroupCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	var mu sync.Mutex
	var batches, committed int
	stop := b.svc.StartAppendGroupCommit(groupcommit.Config{Window: 5 * time.Millisecond, Flushers: 1,
		OnBatch: func(n int, _ time.Duration) {
			mu.Lock()
			batches, committed = batches+1, committed+n
			mu.Unlock()
		}})
	defer stop()

	const perTenant, appends = 4, 25
	type stream struct {
		tenant, id uuid.UUID
		want       string
	}
	var streams []*stream
	for _, tt := range []testTenant{b.a, b.b} {
		for range perTenant {
			streams = append(streams, &stream{tenant: tt.id, id: b.openStreamOf(t, tt)})
		}
	}
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for n, s := range streams {
		for seq := 1; seq <= appends; seq++ {
			s.want += fmt.Sprintf("%d.%d;", n, seq)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1; seq <= appends && errs[n] == nil; seq++ {
				errs[n] = b.svc.Append(ctx, s.tenant, s.id, seq, fmt.Sprintf("%d.%d;", n, seq))
			}
		}()
	}
	wg.Wait()
	for n, s := range streams {
		require.NoError(t, errs[n])
		o, _, err := b.svc.Get(ctx, s.tenant, s.id)
		require.NoError(t, err)
		require.Equal(t, s.want, o.Text, "stream %d", n)
		require.Equal(t, appends, *o.StreamSeq)
	}
	mu.Lock()
	defer mu.Unlock()
	total := len(streams) * appends
	require.Equal(t, total, committed, "every append committed by the append group commit")
	require.Less(t, batches, total, "appends shared transactions")
}

// TestStreamAppendsOfOneStreamInOneBatch: appends gathered into one
// transaction are each answered as if alone — several of one stream all
// taken in seq order, also when a seq came before the one it follows, a
// retry of a seq taken in the same batch a no-op, a gap and an append to
// a finished stream refused — and the refused ones fail none of the
// others.
func TestStreamAppendsOfOneStreamInOneBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	one, other, done := b.openStreamOf(t, b.a), b.openStreamOf(t, b.b), b.openStreamOf(t, b.a)
	require.NoError(t, b.svc.Append(ctx, b.a.id, done, 1, "done"))
	require.NoError(t, b.svc.FinishStream(ctx, b.a.id, done, outbox.Finish{}))

	type call struct {
		tenant, id uuid.UUID
		seq        int
		delta      string
		check      func(t *testing.T, err error)
	}
	ok := func(t *testing.T, err error) { require.NoError(t, err) }
	calls := []call{
		{b.a.id, one, 1, "Hel", ok},
		{b.b.id, other, 1, "other", ok},
		{b.a.id, one, 2, "lo", ok},
		{b.a.id, one, 1, "Hel", ok}, // a retry
		{b.a.id, done, 2, "more", func(t *testing.T, err error) { require.ErrorIs(t, err, outbox.ErrStreamFinished) }},
		{b.a.id, one, 4, "!", ok}, // before the seq it follows
		{b.a.id, one, 3, ",", ok},
		{b.a.id, one, 9, "?", func(t *testing.T, err error) {
			var seqErr *outbox.StreamSeqError
			require.ErrorAs(t, err, &seqErr)
			require.Equal(t, 5, seqErr.Expected)
		}},
	}
	var mu sync.Mutex
	var batches []int
	stop := b.svc.StartAppendGroupCommit(groupcommit.Config{Window: 10 * time.Second, MaxBatch: len(calls), Flushers: 1,
		OnBatch: func(n int, _ time.Duration) {
			mu.Lock()
			batches = append(batches, n)
			mu.Unlock()
		}})
	defer stop()
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.svc.Append(ctx, c.tenant, c.id, c.seq, c.delta)
		}()
		time.Sleep(20 * time.Millisecond) // queued in this order, likely: the answers do not depend on it
	}
	wg.Wait()
	for i, c := range calls {
		t.Run(fmt.Sprint(i), func(t *testing.T) { c.check(t, errs[i]) })
	}
	for id, want := range map[uuid.UUID]string{one: "Hello,!", other: "other", done: "done"} {
		tenant := b.a.id
		if id == other {
			tenant = b.b.id
		}
		o, _, err := b.svc.Get(ctx, tenant, id)
		require.NoError(t, err)
		require.Equal(t, want, o.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{len(calls)}, batches, "one transaction")
}

// TestStreamAppendsSkipABusyRow: a stream whose row another transaction
// holds (the dispatcher recording its send, a finish) does not hold up
// the appends batched with it: they are answered while the row is still
// held, and the held stream's append, skipped by its batch, takes alone
// once the row is free.
func TestStreamAppendsSkipABusyRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	busy, free := b.openStream(t, ""), b.openStream(t, "")
	stop := b.svc.StartAppendGroupCommit(groupcommit.Config{Window: 200 * time.Millisecond, MaxBatch: 2, Flushers: 1})
	defer stop()

	holder, err := b.owner.Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx) //nolint:errcheck
	_, err = holder.Exec(ctx, `SELECT FROM mio.outbox WHERE id = $1 FOR UPDATE`, busy)
	require.NoError(t, err)

	busyDone := make(chan error, 1)
	go func() { busyDone <- b.svc.Append(ctx, b.a.id, busy, 1, "held") }()
	time.Sleep(20 * time.Millisecond) // in the same batch, within its window
	freeDone := make(chan error, 1)
	go func() { freeDone <- b.svc.Append(ctx, b.a.id, free, 1, "free") }()

	select {
	case err := <-freeDone:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the free stream's append waited behind the held row")
	}
	select {
	case err := <-busyDone:
		t.Fatalf("the held stream's append returned while its row was held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, holder.Rollback(ctx))
	require.NoError(t, <-busyDone)
	for id, want := range map[uuid.UUID]string{busy: "held", free: "free"} {
		o, _, err := b.svc.Get(ctx, b.a.id, id)
		require.NoError(t, err)
		require.Equal(t, want, o.Text)
	}
}

// TestStreamAppendRefusedThenNext: an append refused while the one before
// it was not yet committed (a client sending appends concurrently) and
// found next once it has, is tried again — not answered 413; text beyond
// the limit still is.
func TestStreamAppendRefusedThenNext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.openStreamOf(t, b.a)
	require.NoError(t, b.svc.Append(ctx, b.a.id, id, 1, "Hel"))

	again, err := outbox.AppendRefused(b.svc, ctx, b.a.id, id, 2, len("lo"))
	require.NoError(t, err)
	require.True(t, again, "seq 2 is next now: try it again")

	again, err = outbox.AppendRefused(b.svc, ctx, b.a.id, id, 2, 64<<10)
	require.False(t, again)
	var tooLarge *outbox.TooLargeError
	require.ErrorAs(t, err, &tooLarge)

	again, err = outbox.AppendRefused(b.svc, ctx, b.a.id, id, 1, 1)
	require.NoError(t, err, "a retry of an append taken before")
	require.False(t, again)
}
