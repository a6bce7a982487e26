package workers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/workers"
)

// nativeConversation is a conversation of channel ct that streams
// natively: a Slack DM, a Telegram private chat, a Teams personal chat.
func nativeConversation(ct string, i int) string {
	switch ct {
	case "slack":
		return fmt.Sprintf("D%d", 4300+i)
	case "telegram":
		return fmt.Sprint(4300 + i)
	case "teams":
		return fmt.Sprintf("a:%d", 4300+i)
	}
	panic("no native streaming on " + ct)
}

// nativeOps are the ops a native stream's calls show at the fake: the
// first, the ones in between and the last.
var nativeOps = map[string][3]string{
	"slack":    {"stream_start", "stream_append", "stream_stop"},
	"telegram": {"draft", "draft", "send"},
	"teams":    {"stream_start", "stream_append", "stream_stop"},
}

// requireNative checks a native stream's calls: opened, grown and ended
// with the platform's stream calls, never sooner than every apart, each
// showing a prefix of full and the last exactly full.
func requireNative(t *testing.T, ct string, calls []call, full string, every time.Duration) {
	t.Helper()
	ops := nativeOps[ct]
	require.GreaterOrEqual(t, len(calls), 3, "%s: the stream grew in several calls", ct)
	require.Equal(t, ops[0], calls[0].Op, ct)
	for i, c := range calls[1 : len(calls)-1] {
		require.Equal(t, ops[1], c.Op, "%s: call %d", ct, i+1)
	}
	last := calls[len(calls)-1]
	require.Equal(t, ops[2], last.Op, ct)
	require.Equal(t, full, last.Text, "%s: the stream ends with exactly the concatenation", ct)
	for i, c := range calls[1:] {
		require.GreaterOrEqual(t, c.At.Sub(calls[i].At), every-10*time.Millisecond, "%s: call %d", ct, i+1)
		require.True(t, strings.HasPrefix(full, c.Text), "%s: each call shows a prefix of the text", ct)
	}
}

// TestStreamNative: in a Slack DM, a Telegram private chat and a Teams
// personal chat a stream reaches the platform through its own streaming
// (chat.startStream/appendStream/stopStream; sendMessageDraft then
// sendMessage; typing activities with streaminfo then the final message),
// at the edit interval, ending with exactly the concatenation; the row
// records the stream's id, then the final message's.
func TestStreamNative(t *testing.T) {
	t.Parallel()
	rate := newEditRate(streamEvery)
	b := newOutBundle(t, outOpts{script: rate.script, dispatch: streamDispatch(workers.DispatchConfig{})})
	svc := outbox.New(b.env.Pool, b.clients[0])
	parts, full := deltas(40)
	var wg sync.WaitGroup
	ids := map[string]uuid.UUID{}
	for i, ct := range []string{"slack", "telegram", "teams"} {
		conv := nativeConversation(ct, i)
		id := b.openStream(t, ct, conv, "")
		ids[ct] = id
		// Opened and grown before the final text (requireNative).
		wg.Go(func() { b.appendShown(t, svc, ct, conv, id, parts, 10*time.Millisecond, 2) })
	}
	wg.Wait()
	all := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		all = append(all, id)
	}
	b.waitTerminal(t, all, 20*time.Second)
	require.Zero(t, rate.Limited(), "no call came sooner than the interval")
	require.Zero(t, b.fake.Invalid(), "every stream call was well formed")
	for ct, id := range ids {
		o, events := b.get(t, id)
		require.Equal(t, db.HandoffHandedOff, o.HandoffState, "%s: %s %v", ct, o.LastError, timeline(events))
		calls := b.callsOf(ct, o.ConversationID)
		requireNative(t, ct, calls, full, streamEvery)
		require.Contains(t, timeline(events), "stream_opened:sending@1", ct)
		if ct == "telegram" {
			require.NotContains(t, o.ProviderMessageID, "draft", "the sent message's id replaces the draft's")
		}
	}
}

// TestStreamNativeResumed: a native stream whose worker stops mid-stream
// is resumed by another process: in a Telegram private chat the draft
// goes on (it carries its whole text) and the final text is sent; in a
// Slack DM, whose appends are deltas from a point the new worker does not
// know, the stream is stopped and the message updated to the final text.
func TestStreamNativeResumed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := outOpts{dispatch: streamDispatch(workers.DispatchConfig{Lease: time.Second})}
	b := newOutBundle(t, o)
	svc := outbox.New(b.env.Pool, b.clients[0])
	parts, full := deltas(20)
	half := strings.Join(parts[:10], "")
	ids := map[string]uuid.UUID{}
	for i, ct := range []string{"slack", "telegram"} {
		id := b.openStream(t, ct, nativeConversation(ct, 10+i), "")
		ids[ct] = id
		for i, p := range parts[:10] {
			require.NoError(t, svc.Append(ctx, b.tenant, id, i+1, p))
		}
	}
	require.Eventually(t, func() bool {
		for ct, id := range ids {
			row, _ := b.get(t, id)
			calls := b.callsOf(ct, row.ConversationID)
			if len(calls) == 0 || calls[len(calls)-1].Text != half || row.ProviderMessageID == "" {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "the first process shows the first half and recorded the streams")
	require.NoError(t, b.clients[0].StopAndCancel(ctx))
	for _, id := range ids {
		for i, p := range parts[10:] {
			require.NoError(t, svc.Append(ctx, b.tenant, id, i+11, p))
		}
	}
	o.sweep = true
	b.newClient(t, o, true)
	require.Eventually(t, func() bool {
		calls := b.callsOf("telegram", nativeConversation("telegram", 11))
		return calls[len(calls)-1].Text == full
	}, 10*time.Second, 10*time.Millisecond, "the resumed draft goes on")
	for _, id := range ids {
		require.NoError(t, svc.FinishStream(ctx, b.tenant, id, outbox.Finish{Seq: len(parts)}))
	}
	b.waitTerminal(t, []uuid.UUID{ids["slack"], ids["telegram"]}, 20*time.Second)
	require.Zero(t, b.fake.Invalid())
	for ct, id := range ids {
		row, events := b.get(t, id)
		require.Equal(t, db.HandoffHandedOff, row.HandoffState, row.LastError)
		require.Contains(t, timeline(events), "resumed:sending@1", "the same attempt, resumed")
		calls := b.callsOf(ct, row.ConversationID)
		require.Equal(t, full, calls[len(calls)-1].Text, ct)
		var ops []string
		for _, c := range calls {
			ops = append(ops, c.Op)
		}
		switch ct {
		case "telegram":
			require.Equal(t, "send", ops[len(ops)-1], "one message, sent at the end: %v", ops)
			require.Equal(t, 1, strings.Count(strings.Join(ops, " "), "send"), ops)
			require.Equal(t, full, calls[len(calls)-2].Text, "the resumed draft went on to the full text: %v", ops)
		case "slack":
			require.Equal(t, "stream_start", ops[0])
			require.Equal(t, []string{"stream_stop", "edit"}, ops[len(ops)-2:], "stopped, then updated: %v", ops)
			require.Equal(t, calls[0].EditID, calls[len(calls)-1].EditID, "the streamed message is the one updated")
		}
	}
}

// TestStreamFortySecondsEveryChannel is the check of every channel at its
// real rate: on each channel (Slack, Telegram and Teams both in a
// conversation that streams natively and in one that does not) a
// 40-second stream of 400 deltas against the fake, which answers 429 to
// any call of a conversation sooner than the channel's interval after
// the previous one (channels.Info.StreamEditInterval: Slack 1.2 s,
// Telegram 3 s, Discord, Teams and Google Chat 1 s, the webhook 250 ms).
// Where native the platform's stream calls are used, elsewhere one
// message is sent and edited; no call is refused; the platform ends up
// showing exactly the concatenation. The streams run at once: the test
// takes about 45 s.
func TestStreamFortySecondsEveryChannel(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40-second stream")
	}
	t.Parallel()
	every := map[string]time.Duration{}
	reg := builtin.Registry(builtin.Options{})
	for _, ct := range allChannels {
		ch, _ := reg.Get(ct)
		every[ct] = ch.Info().StreamEditInterval
		if every[ct] == 0 {
			every[ct] = channels.DefaultStreamEditInterval
		}
	}
	rates := map[string]*editRate{}
	for ct, d := range every {
		rates[ct] = newEditRate(d)
	}
	script := func(channel, conversation string, n int) action {
		return rates[channel].script(channel, conversation, n)
	}
	b := newOutBundle(t, outOpts{script: script})
	svc := outbox.New(b.env.Pool, b.clients[0])
	parts, full := deltas(400)

	type stream struct {
		name, ct, conv string
		native         bool
	}
	var streams []stream
	for i, ct := range allChannels {
		streams = append(streams, stream{ct, ct, editConversation(ct, 100+i), false})
		if _, ok := nativeOps[ct]; ok {
			streams = append(streams, stream{ct + "_native", ct, nativeConversation(ct, 100+i), true})
		}
	}
	// The streams run at once (parallel subtests would run two at a time,
	// as many as -parallel allows on two cores); each is checked in its
	// subtest.
	ids := make([]uuid.UUID, len(streams))
	var wg sync.WaitGroup
	for i, s := range streams {
		ids[i] = b.openStream(t, s.ct, s.conv, "")
		wg.Go(func() { appendAll(t, svc, b.tenant, ids[i], parts, 100*time.Millisecond) })
	}
	wg.Wait()
	b.waitTerminal(t, ids, 30*time.Second)
	for i, s := range streams {
		t.Run(s.name, func(t *testing.T) {
			o, events := b.get(t, ids[i])
			require.Equal(t, db.HandoffHandedOff, o.HandoffState, "%s %v", o.LastError, timeline(events))
			calls := b.callsOf(s.ct, s.conv)
			if s.native {
				requireNative(t, s.ct, calls, full, every[s.ct])
				return
			}
			require.Equal(t, full, calls[len(calls)-1].Text, "the platform shows exactly the concatenation")
			if s.ct == "whatsapp" || s.ct == "zoho_cliq" {
				require.Len(t, calls, 1, "cannot edit: one message with the final text")
				return
			}
			require.Equal(t, "send", calls[0].Op)
			require.Greater(t, len(calls), 10, "the text grew in many edits")
			for i, c := range calls[1:] {
				require.Equal(t, "edit", c.Op)
				require.GreaterOrEqual(t, c.At.Sub(calls[i].At), every[s.ct]-10*time.Millisecond, "call %d", i+1)
			}
		})
	}
	for ct, r := range rates {
		require.Zero(t, r.Limited(), "%s: no call came sooner than the platform's rate", ct)
	}
	require.Zero(t, b.fake.Invalid(), "every stream call was well formed")
}

// TestStreamNativeRefused: a native stream the platform refuses to open
// (a permanent error from chat.startStream: an app without its AI
// features) falls back to one message sent and edited, ending with the
// complete text.
func TestStreamNativeRefused(t *testing.T) {
	t.Parallel()
	conv := nativeConversation("slack", 20)
	script := func(channel, conversation string, n int) action {
		if conversation == conv && n == 1 {
			return actPermanent
		}
		return actOK
	}
	b := newOutBundle(t, outOpts{script: script, dispatch: streamDispatch(workers.DispatchConfig{})})
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "slack", conv, "")
	parts, full := deltas(40)
	appendAll(t, svc, b.tenant, id, parts, 10*time.Millisecond)
	b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)
	row, events := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, row.HandoffState, "%s %v", row.LastError, timeline(events))
	calls := b.callsOf("slack", conv)
	require.Equal(t, "send", calls[0].Op, "the refused start was not recorded; the message was sent")
	for _, c := range calls[1:] {
		require.Equal(t, "edit", c.Op)
	}
	require.Equal(t, full, calls[len(calls)-1].Text)
}

// TestStreamNativeRefusedThenResumed: a Telegram stream whose draft was
// refused (sent and edited instead) and whose run then hands over at its
// job's timeout is resumed as what it is, a sent message: the next runs
// edit it, never draft again, and the final text is an edit too. One
// message at the platform, every edit a prefix of the text, the last
// exactly the concatenation.
func TestStreamNativeRefusedThenResumed(t *testing.T) {
	t.Parallel()
	conv := nativeConversation("telegram", 21)
	script := func(channel, conversation string, n int) action {
		if conversation == conv && n == 1 {
			return actPermanent
		}
		return actOK
	}
	// A run hands over SendTimeout + 5 s before its job's timeout: here
	// 1.5 s into each run, while the stream appends for 4 s.
	cfg := streamDispatch(workers.DispatchConfig{SendTimeout: time.Second, JobTimeout: 7500 * time.Millisecond})
	b := newOutBundle(t, outOpts{script: script, dispatch: cfg, sweep: true})
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "telegram", conv, "")
	parts, full := deltas(40)
	appendAll(t, svc, b.tenant, id, parts, 100*time.Millisecond)
	b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)

	row, events := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, row.HandoffState, "%s %v", row.LastError, timeline(events))
	require.Contains(t, timeline(events), "resumed:sending@1", "the next run resumed the same attempt")
	calls := b.callsOf("telegram", conv)
	var ops []string
	for _, c := range calls {
		ops = append(ops, c.Op)
	}
	require.Equal(t, "send", calls[0].Op, "the refused draft was not recorded; the message was sent: %v", ops)
	for _, c := range calls[1:] {
		require.Equal(t, "edit", c.Op, "one message, edited after the resume too: %v", ops)
		require.True(t, strings.HasPrefix(full, c.Text), "each edit shows a prefix of the text: %q", c.Text)
	}
	require.Equal(t, full, calls[len(calls)-1].Text)
}

// TestStreamNativeFinalRetried: a Teams stream whose final message was
// taken but whose answer was lost is retried; Teams answers the second
// final message 403 (the stream is over), the adapter updates the
// streamed message instead, and the row ends handed off, not dead: one
// final message at the platform, then an update of the same message with
// exactly the concatenation.
func TestStreamNativeFinalRetried(t *testing.T) {
	t.Parallel()
	conv := nativeConversation("teams", 22)
	cfg := streamDispatch(workers.DispatchConfig{SendTimeout: time.Second, BackoffBase: 50 * time.Millisecond,
		BackoffMax: 100 * time.Millisecond})
	b := newOutBundle(t, outOpts{dispatch: cfg})
	b.fake.LoseNext("stream_stop")
	svc := outbox.New(b.env.Pool, b.clients[0])
	id := b.openStream(t, "teams", conv, "")
	parts, full := deltas(20)
	appendAll(t, svc, b.tenant, id, parts, 10*time.Millisecond)
	b.waitTerminal(t, []uuid.UUID{id}, 20*time.Second)

	row, events := b.get(t, id)
	require.Equal(t, db.HandoffHandedOff, row.HandoffState, "%s %v", row.LastError, timeline(events))
	calls := b.callsOf("teams", conv)
	var ops []string
	for _, c := range calls {
		ops = append(ops, c.Op)
	}
	require.Equal(t, "stream_start", ops[0], ops)
	require.Equal(t, []string{"stream_stop", "edit"}, ops[len(ops)-2:], "the final message, then the retry's update: %v", ops)
	require.Equal(t, 1, strings.Count(strings.Join(ops, " "), "stream_stop"), "one final message taken: %v", ops)
	last := calls[len(calls)-1]
	require.Equal(t, full, last.Text)
	require.Equal(t, calls[len(calls)-2].EditID, last.EditID, "the streamed message is the one updated")
	require.Equal(t, last.EditID, row.ProviderMessageID)
}
