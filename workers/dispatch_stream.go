package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// StreamTimeoutDefault is how long a streamed reply may stay open: one
// its agent has not finished by then is finished with its text so far
// (a stream_timed_out event).
const StreamTimeoutDefault = 2 * time.Minute

// errStreamHandover: the job's run ends before the stream does; the
// stream's lease was ended and the row given a new job, which resumes it.
var errStreamHandover = errors.New("stream handed over to a new job")

// isStream reports whether a claimed row is a streamed reply: one that
// names itself in edit_of (db.OutboxNew).
func isStream(c *db.ClaimCandidate) bool { return c.EditOf != nil && *c.EditOf == c.ID }

// streamEvery is how often a channel's streamed replies are edited at
// most (channels.Info.StreamEditInterval).
func streamEvery(reg *channels.Registry) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, ct := range reg.Types() {
		ch, _ := reg.Get(ct)
		out[ct] = ch.Info().StreamEditInterval
	}
	return out
}

// streamRun is one run's rendering of a streamed reply: the message it
// grows at the platform and what it shows.
type streamRun struct {
	d        *Dispatcher
	tenantID uuid.UUID
	c        *db.ClaimCandidate
	acct     *accounts.Account
	editor   channels.Editor // nil: the channel cannot edit
	// native is the platform's own streaming, when the adapter has it and
	// the conversation qualifies (nil: the message is sent and edited).
	native channels.Streamer
	// calls counts the native calls this run made.
	calls int
	every time.Duration
	// providerID is the message the stream grows ("" until it is sent).
	providerID string
	// shown is the text the message shows; known is false after a
	// resume, when what the dead worker showed last is not known.
	shown string
	known bool
	// next is the earliest next provider call (the edit interval, a
	// platform's Retry-After).
	next time.Time
	// stuck: an edit failed for good (the message was deleted, say);
	// only the final call is tried.
	stuck bool
	// record is what the next look records: the provider id of the
	// message when just sent, and the event of the previous call.
	record struct {
		providerID string
		event      string
		detail     json.RawMessage
	}
	// edits counts the edits not yet recorded: they are recorded as one
	// stream_edited event when the lease is next extended.
	edits int
	// op is the operation of the newest unrecorded edit ("edit" or a
	// native stream's append).
	op string
	// renewAt is when a look next extends the lease; looks before it
	// only read the row.
	renewAt  time.Time
	timedOut bool
}

// stream renders a streamed reply until its agent finishes it (or it
// times out): the row's text so far is shown by sending one message and
// editing it at most once per the channel's edit interval, the newest
// text each time (deltas that arrive in between are coalesced). Each
// look at the row extends the attempt's lease, so a worker that dies
// mid-stream leaves a lease that ends within DispatchConfig.Lease; the
// attempt is then resumed by another job, which goes on editing the same
// message (its provider id is on the row; the claim returns it as the
// edited message's). stream returns the final message for attempt to
// send: msg with the complete final text, as an edit of the message when
// there is one; pre is set instead when the message already shows it.
//
// Where the adapter streams natively (channels.Streamer) and the
// conversation qualifies, the message is a native stream instead: opened
// with StreamStart, grown with StreamAppend at the same rate, and stop
// is the final call (StreamStop with the complete final text). A run
// that resumes a native stream goes on appending where the platform
// allows it (else its adapter answers channels.ErrStreamLost and only the
// final call is made, which shows the final text by an edit); a stream
// whose native start was refused, a sent message, is resumed by editing.
func (d *Dispatcher) stream(ctx context.Context, tenantID uuid.UUID, c *db.ClaimCandidate, acct *accounts.Account,
	msg *channels.OutboundMessage) (pre *channels.SendResult, stop sendFunc, timedOut bool, err error) {
	s := &streamRun{d: d, tenantID: tenantID, c: c, acct: acct, every: d.streamEvery[acct.ChannelType],
		providerID: c.EditProviderMessageID, known: c.EditProviderMessageID == "", next: time.Now()}
	if s.every <= 0 {
		s.every = channels.DefaultStreamEditInterval
	}
	open := d.cfg.Metrics.StreamsOpen.WithLabelValues(acct.ChannelType)
	open.Inc()
	defer open.Dec()
	s.editor, _ = acct.Outbound.(channels.Editor)
	if st, ok := acct.Outbound.(channels.Streamer); ok && st.Streams(msg) {
		s.native = st
		if s.providerID != "" {
			sent, err := s.openedBySend(ctx)
			if err != nil {
				return nil, nil, false, err
			}
			if sent {
				s.native = nil // the start was refused: the message is edited
			}
		}
	}
	deadline := c.CreatedAt.Add(d.cfg.StreamTimeout)
	// A run whose job ends before the stream hands it over in time for
	// the final call.
	stopAt := time.Time{}
	if dl, ok := ctx.Deadline(); ok {
		stopAt = dl.Add(-d.cfg.SendTimeout - 5*time.Second)
	}
	for {
		look, err := s.see(ctx)
		if err != nil {
			return nil, nil, false, err
		}
		if !look.Finished && !time.Now().Before(deadline) {
			ok, err := s.timeOut(ctx)
			if err != nil {
				return nil, nil, false, err
			}
			if !ok {
				continue // finished meanwhile: look again
			}
			look.Finished = true
		}
		if look.Finished {
			if s.edits > 0 {
				if _, err := s.look(ctx, d.cfg.lease()); err != nil {
					return nil, nil, false, err
				}
			}
			if err := s.waitNext(ctx); err != nil {
				return nil, nil, false, err
			}
			pre, stop := s.final(msg, look)
			return pre, stop, s.timedOut, nil
		}
		if !stopAt.IsZero() && time.Now().After(stopAt) {
			return nil, nil, false, s.handOver(ctx)
		}
		if s.due(look.Text) {
			if err := s.show(ctx, msg, look.Text); err != nil {
				return nil, nil, false, err
			}
			if s.record.providerID != "" {
				// The message was just sent: record its id at once, so
				// that a worker resuming the stream edits it.
				continue
			}
		}
		if err := s.sleep(ctx, deadline); err != nil {
			return nil, nil, false, err
		}
	}
}

// openedBySend reports whether a resumed stream's message was sent
// rather than opened as a native stream (the platform refused the
// start): its stream_opened event names the operation. A native stream
// resumed natively and a sent message resumed by editing it keep one
// message at the platform; drafting again on Telegram would end with a
// second one.
func (s *streamRun) openedBySend(ctx context.Context) (bool, error) {
	var events []db.OutboxEvent
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		events, err = db.OutboxEventList(ctx, tx, s.tenantID, s.c.ID)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("%w: %w", errShutdown, ctx.Err())
		}
		return false, fmt.Errorf("stream %s: events: %w", s.c.ID, err)
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Event != db.EventStreamOpened {
			continue
		}
		var d struct {
			Operation string `json:"operation"`
		}
		_ = json.Unmarshal(events[i].Detail, &d) // an unreadable detail: native, as before
		return d.Operation == "send", nil
	}
	return false, nil
}

// see reads the row once per edit interval: a look that writes (look)
// when there is something to record or about a third of the lease has passed
// since it was last extended, else a read. The stream's appends then
// never wait behind the dispatcher's row lock, and the row gets a new
// version per append rather than per append and per interval.
func (s *streamRun) see(ctx context.Context) (*db.StreamLook, error) {
	if s.record.providerID != "" || s.record.event != "" || !time.Now().Before(s.renewAt) {
		return s.look(ctx, s.d.cfg.lease())
	}
	var look *db.StreamLook
	err := s.withConn(ctx, func() (err error) {
		look, err = db.OutboxStreamRead(ctx, s.d.pool, db.StreamPollParams{TenantID: s.tenantID, ID: s.c.ID, AttemptNo: s.c.AttemptNo})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", errShutdown, ctx.Err())
		}
		return nil, fmt.Errorf("stream %s: %w", s.c.ID, err)
	}
	return look, nil
}

// look reads the row and extends the attempt's lease by lease, recording
// what the previous call did and the edits since the previous look that
// wrote; db.ErrNotFound means the attempt is no longer this run's.
func (s *streamRun) look(ctx context.Context, lease time.Duration) (*db.StreamLook, error) {
	if s.edits > 0 && s.record.event == "" {
		s.record.event = db.EventStreamEdited
		s.record.detail, _ = json.Marshal(map[string]any{"edits": s.edits, "bytes": len(s.shown), "operation": s.op})
	}
	now := time.Now()
	var look *db.StreamLook
	err := s.withConn(ctx, func() (err error) {
		look, err = db.OutboxStreamPoll(ctx, s.d.pool, db.StreamPollParams{TenantID: s.tenantID, ID: s.c.ID,
			AttemptNo: s.c.AttemptNo, LeaseUntil: now.Add(lease), ProviderMessageID: s.record.providerID,
			Event: s.record.event, Detail: s.record.detail})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", errShutdown, ctx.Err())
		}
		return nil, fmt.Errorf("stream %s: %w", s.c.ID, err)
	}
	if s.record.event == db.EventStreamEdited {
		s.edits = 0
	}
	s.record.providerID, s.record.event, s.record.detail = "", "", nil
	// Next in a third of the lease, give or take a twelfth: streams
	// opened together do not all write at the same moment ever after.
	s.renewAt = now.Add(lease/4 + rand.N(lease/6+1))
	return look, nil
}

// timeOut finishes the stream with its text so far; false when it was
// finished meanwhile.
func (s *streamRun) timeOut(ctx context.Context) (bool, error) {
	var ok bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		ok, err = db.OutboxStreamTimeOut(ctx, tx, s.tenantID, s.c.ID, s.c.AttemptNo)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("stream %s: time out: %w", s.c.ID, err)
	}
	if ok {
		s.timedOut = true
		s.d.cfg.Logger.Info("stream timed out; finished with its text so far", "message_id", s.c.ID,
			"timeout", s.d.cfg.StreamTimeout.String())
	}
	return ok, nil
}

// due reports whether text should be shown now: it differs from what the
// message shows, the channel can show it before the finish, and the edit
// interval allows a call.
func (s *streamRun) due(text string) bool {
	if text == "" || s.stuck || (s.known && text == s.shown) || time.Now().Before(s.next) {
		return false
	}
	// A channel that cannot edit sends the final text only.
	return s.editor != nil || s.native != nil
}

// show sends the message (the first time) or edits it to text, once the
// account's rate-limit buckets grant the call a token (as they grant
// ordinary sends). A rate limit moves the next call to after Retry-After;
// other failures are logged and left to the next interval (a permanent
// one stops the edits: the final call decides the outcome).
func (s *streamRun) show(ctx context.Context, msg *channels.OutboundMessage, text string) error {
	if wait, err := s.takeTokens(ctx); err != nil || wait > 0 {
		s.next = time.Now().Add(wait)
		return err
	}
	m := *msg
	m.Text = text
	first := s.providerID == ""
	op, call := "send", s.acct.Outbound.Send
	if !first {
		m.EditProviderMessageID = s.providerID
	}
	switch {
	case s.native != nil:
		op, call = s.nativeCall()
	case !first:
		op, call = "edit", s.editor.Edit
	}
	if err := s.d.takeSendSlot(ctx); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, s.d.cfg.SendTimeout)
	res, err := call(sctx, &m)
	cancel()
	<-s.d.sends
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", errShutdown, ctx.Err())
	}
	s.next = time.Now().Add(s.every)
	var rl *channels.RateLimitedError
	var perm *channels.PermanentError
	switch {
	case err == nil:
		s.shown, s.known = text, true
		if s.native != nil {
			s.calls++
		}
		if first {
			s.providerID = res.ProviderMessageID
			s.record.providerID, s.record.event = res.ProviderMessageID, db.EventStreamOpened
			s.record.detail, _ = json.Marshal(map[string]any{"provider_message_id": res.ProviderMessageID, "operation": op})
		} else {
			s.edits++
			s.op = op
		}
	case errors.As(err, &rl):
		s.next = time.Now().Add(max(rl.RetryAfter, s.every))
		s.d.cfg.Logger.Info("stream: rate limited", "message_id", s.c.ID, "retry_after", rl.RetryAfter.String())
	case errors.As(err, &perm) && first && s.native != nil:
		// The platform refused to stream here (a Slack app without its
		// AI features, say): the message is sent and edited instead.
		s.native = nil
		s.d.cfg.Logger.Warn("stream: native streaming refused; editing instead", "message_id", s.c.ID, "err", errorText(err))
	case errors.As(err, &perm) && !first:
		s.stuck = true
		s.d.cfg.Logger.Warn("stream: edit failed; only the final text will be sent", "message_id", s.c.ID, "err", errorText(err))
	default:
		s.d.cfg.Logger.Info("stream: call failed; trying again", "message_id", s.c.ID, "operation", op, "err", errorText(err))
	}
	return nil
}

// takeTokens takes a token for one call from each of the account's
// buckets (per conversation first, then per account), as a claim does;
// a bucket that grants none returns the wait until its next token. The
// claim's token covers the stream's first call, and its final call takes
// none (it does not wait behind the stream's own edits): the calls in
// between take their own.
func (s *streamRun) takeTokens(ctx context.Context) (time.Duration, error) {
	if s.providerID == "" {
		return 0, nil
	}
	specs := bucketsFor(s.d.limits[s.c.ChannelType], s.c.RateLimitPerSec, s.c.RateLimitBurst)
	for _, scope := range []string{scopeConversation, scopeAccount} {
		for _, spec := range specs {
			if spec.Scope != scope {
				continue
			}
			want := db.RateWant{Key: bucketKey(scope, s.c.AccountID, s.c.ConversationID), Rate: spec.Rate, Burst: spec.Burst, N: 1}
			var grants []db.RateGrant
			err := s.inTx(ctx, func(tx pgx.Tx) error {
				var err error
				grants, err = db.RateTake(ctx, tx, s.tenantID, []db.RateWant{want}, nil)
				return err
			})
			if err != nil {
				return 0, fmt.Errorf("stream %s: rate limit: %w", s.c.ID, err)
			}
			if grants[0].Granted < 1 {
				return max(grants[0].Wait, time.Millisecond), nil
			}
		}
	}
	return 0, nil
}

// nativeCall is the native call that shows the text so far: StreamStart
// the first time, StreamAppend after.
func (s *streamRun) nativeCall() (string, sendFunc) {
	if s.providerID == "" {
		return "stream_start", s.native.StreamStart
	}
	shown := channels.StreamShown{Text: s.shown, Calls: s.calls, Lost: !s.known}
	return "stream_append", func(ctx context.Context, m *channels.OutboundMessage) (*channels.SendResult, error) {
		if err := s.native.StreamAppend(ctx, m, shown); err != nil {
			return nil, err
		}
		return &channels.SendResult{ProviderMessageID: m.EditProviderMessageID}, nil
	}
}

// final is the message that ends the stream, or the result of the call
// that already shows it, or the native stream's StreamStop.
func (s *streamRun) final(msg *channels.OutboundMessage, look *db.StreamLook) (*channels.SendResult, sendFunc) {
	msg.Text = look.Text
	msg.RichContent = nil
	if len(look.RichContent) > 0 {
		var rc envelope.RichContent
		if json.Unmarshal(look.RichContent, &rc) == nil {
			msg.RichContent = &rc
		}
	}
	if s.native != nil {
		if s.providerID == "" {
			return nil, nil // no stream was opened: the final text is sent
		}
		msg.EditProviderMessageID = s.providerID
		shown := channels.StreamShown{Text: s.shown, Calls: s.calls, Lost: !s.known}
		return nil, func(ctx context.Context, m *channels.OutboundMessage) (*channels.SendResult, error) {
			return s.native.StreamStop(ctx, m, shown)
		}
	}
	if s.providerID != "" && s.known && !s.stuck && s.shown == msg.Text && msg.RichContent == nil {
		return &channels.SendResult{ProviderMessageID: s.providerID}, nil
	}
	if s.providerID != "" && s.editor != nil {
		msg.EditProviderMessageID = s.providerID
	}
	return nil, nil
}

// sendFunc is one provider call of a message.
type sendFunc = func(context.Context, *channels.OutboundMessage) (*channels.SendResult, error)

// waitNext waits until the edit interval allows the next call.
func (s *streamRun) waitNext(ctx context.Context) error {
	return sleepCtx(ctx, time.Until(s.next))
}

// sleep waits until the next look: one edit interval, or the next call's
// time when a platform asked for longer, but not past the deadline.
func (s *streamRun) sleep(ctx context.Context, deadline time.Time) error {
	wait := max(s.every, time.Until(s.next))
	wait = min(wait, max(time.Until(deadline), time.Millisecond))
	return sleepCtx(ctx, wait)
}

// handOver ends the attempt's lease and gives the row a new job, which
// resumes the stream: this run's job is about to reach its timeout.
func (s *streamRun) handOver(ctx context.Context) error {
	if _, err := s.look(ctx, 0); err != nil {
		return err
	}
	items := []rescheduled{{id: s.c.ID, accountID: s.c.AccountID}}
	if err := s.d.rescheduleRetrying(ctx, s.tenantID, items); err != nil {
		s.d.cfg.Logger.Warn("stream: hand over; the sweeper will", "message_id", s.c.ID, "err", err)
	}
	return errStreamHandover
}

// withConn runs fn, which uses one pool connection, once one of the
// process's DispatchConfig.StreamConns is free.
func (s *streamRun) withConn(ctx context.Context, fn func() error) error {
	asked := time.Now()
	select {
	case s.d.streamConns <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errShutdown, ctx.Err())
	}
	s.d.cfg.Metrics.StreamConnWaits.Observe(time.Since(asked).Seconds())
	defer func() { <-s.d.streamConns }()
	return fn()
}

// inTx runs fn in a transaction of the stream's tenant, on one of the
// stream connection slots (withConn).
func (s *streamRun) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.withConn(ctx, func() error { return db.InTenantTx(ctx, s.d.pool, s.tenantID, fn) })
}

// takeSendSlot takes one of the process's MaxSends provider calls.
func (d *Dispatcher) takeSendSlot(ctx context.Context) error {
	select {
	case d.sends <- struct{}{}:
		return nil
	default:
		return d.waitSendSlot(ctx)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errShutdown, ctx.Err())
	case <-t.C:
		return nil
	}
}
