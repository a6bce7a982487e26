package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/outbox"
)

// attempt makes one provider call for a claimed row and returns its
// outcome to record. An error means nothing is to be recorded: the job's
// context ended (shutdown) or the database failed; the attempt keeps its
// lease and is resumed later with the same number and key.
func (d *Dispatcher) attempt(ctx context.Context, tenantID uuid.UUID, res claimRes) (db.OutboxFinish, error) {
	c := res.cand
	fin := db.OutboxFinish{ID: c.ID, AttemptNo: c.AttemptNo}
	dead := func(reason string) (db.OutboxFinish, error) {
		fin.Outcome, fin.Error = db.OutcomeDead, reason
		d.deadLetter(tenantID, c, reason)
		return fin, nil
	}
	acct, err := d.cfg.Accounts.Outbound(ctx, tenantID, c.AccountID)
	if errors.Is(err, accounts.ErrCannotSend) {
		return dead(errorText(err))
	}
	if err != nil {
		return fin, err
	}
	if acct.Status != db.AccountActive {
		return dead("account is " + acct.Status)
	}
	msg, err := outboundMessage(c)
	if err != nil {
		return dead(errorText(err))
	}

	op, call := "send", acct.Outbound.Send
	editAsNew := ""
	var streamed *channels.SendResult // a stream whose message shows its final text
	streamTimedOut := false
	if msg.Reaction != nil {
		rc, ok := acct.Outbound.(channels.Reactor)
		if !ok {
			return dead("the " + c.ChannelType + " channel cannot react to messages (no reactions capability)")
		}
		op, call = "react", rc.React
	} else if isStream(c) {
		var stop sendFunc
		streamed, stop, streamTimedOut, err = d.stream(ctx, tenantID, c, acct, msg)
		if err != nil {
			return fin, err
		}
		if stop != nil {
			op, call = "stream_stop", stop
		} else if msg.EditProviderMessageID != "" {
			op, call = "edit", acct.Outbound.(channels.Editor).Edit
		}
	} else if c.EditOf != nil {
		ed, canEdit := acct.Outbound.(channels.Editor)
		switch {
		case c.EditProviderMessageID == "":
			editAsNew = "the original message has no provider message id (never handed off)"
		case !canEdit:
			editAsNew = "the channel cannot edit messages"
		default:
			op, call = "edit", ed.Edit
			msg.EditProviderMessageID = c.EditProviderMessageID
		}
	}

	if streamed != nil {
		// The message shows the final text already: nothing to call.
		call = func(context.Context, *channels.OutboundMessage) (*channels.SendResult, error) { return streamed, nil }
	} else if err := d.takeSendSlot(ctx); err != nil {
		return fin, err
	}
	sctx, cancel := context.WithTimeout(ctx, d.cfg.SendTimeout)
	sctx, span := d.attemptSpan(sctx, tenantID, c, op)
	t0 := time.Now()
	sent, err := call(sctx, msg)
	elapsed := time.Since(t0)
	cancel()
	if streamed == nil {
		<-d.sends
	}
	if ctx.Err() != nil {
		endAttempt(span, "shutdown", ctx.Err())
		return fin, fmt.Errorf("%w: %w", errShutdown, ctx.Err())
	}

	detail := map[string]any{"operation": op}
	if editAsNew != "" {
		detail["edit_sent_as_new_message"] = editAsNew
	}
	if isStream(c) {
		detail["stream"] = true
		if streamTimedOut {
			detail["stream_timed_out"] = true
		}
	}
	outcome := metrics.OutcomeSuccess
	var rl *channels.RateLimitedError
	var perm *channels.PermanentError
	switch {
	case err == nil:
		fin.Outcome = db.OutcomeHandedOff
		fin.ProviderMessageID = sent.ProviderMessageID
		fin.AcceptProvider = c.ProviderState.Rank() < db.ProviderAccepted.Rank()
		detail["provider_message_id"] = sent.ProviderMessageID
		if sent.IdempotencyKey != "" {
			detail["idempotency_key"] = sent.IdempotencyKey
		}
		if sent.ConversationID != "" {
			detail["conversation_moved_to"] = sent.ConversationID
		}
		if acct.Capabilities.Receipts && msg.Reaction == nil {
			fin.ReceiptTimeout = d.cfg.ReceiptTimeout
		}
		d.cfg.Metrics.HandoffLatency.WithLabelValues(c.ChannelType).Observe(time.Since(c.CreatedAt).Seconds())
	case errors.As(err, &rl):
		// Not a failed attempt: the same attempt (and key) goes again
		// after Retry-After.
		outcome = metrics.OutcomeRateLimited
		fin.Outcome = db.OutcomeRateLimited
		fin.Delay = d.retry().RetryAfter(rl.RetryAfter)
		detail["retry_after"] = fin.Delay.String()
		detail["error"] = errorText(err)
		d.cfg.Metrics.RateLimitWaits.WithLabelValues(c.ChannelType, metrics.RateLimitProvider).Observe(fin.Delay.Seconds())
	case errors.As(err, &perm):
		outcome = metrics.OutcomePermanentError
		fin.Outcome, fin.Error = db.OutcomeDead, errorText(err)
		detail["error"] = fin.Error
		if refused := (*channels.GrantRefusedError)(nil); errors.As(err, &refused) {
			detail["account_disabled"] = true // by the renewal that was refused
		}
		if errors.Is(err, channels.ErrEndpointGone) {
			detail["account_disabled"] = true
			d.disableAccount(ctx, tenantID, c.AccountID)
		}
		d.deadLetter(tenantID, c, fin.Error)
	default:
		// Transient (5xx, timeout, network) or unclassified.
		outcome = metrics.OutcomeTransientError
		fin.Error = errorText(err)
		detail["error"] = fin.Error
		dead, maxAttempts, delay := d.retry().Next(c.AttemptNo-c.SeriesFirstAttempt+1, acct.MaxAttempts)
		if dead {
			fin.Outcome = db.OutcomeDead
			detail["attempts_exhausted"] = maxAttempts
			d.deadLetter(tenantID, c, fin.Error)
		} else {
			fin.Outcome = db.OutcomeRetry
			fin.Delay = delay
			detail["retry_in"] = fin.Delay.String()
			d.cfg.Logger.Info("outbound attempt failed; retrying", "message_id", c.ID, "attempt", c.AttemptNo,
				"channel_type", c.ChannelType, "retry_in", fin.Delay.String(), "err", fin.Error)
		}
	}
	endAttempt(span, outcome, err)
	d.cfg.Metrics.SendTotal.WithLabelValues(c.ChannelType, metrics.DirectionOutbound, outcome).Inc()
	d.cfg.Metrics.SendLatency.WithLabelValues(c.ChannelType, outcome).Observe(elapsed.Seconds())
	fin.Detail, _ = json.Marshal(detail)
	return fin, nil
}

func (d *Dispatcher) deadLetter(tenantID uuid.UUID, c *db.ClaimCandidate, reason string) {
	d.cfg.Metrics.DeadLetters.WithLabelValues(c.ChannelType).Inc()
	d.cfg.Logger.Warn("outbound message is a dead letter", "tenant_id", tenantID, "message_id", c.ID,
		"attempt", c.AttemptNo, "channel_type", c.ChannelType, "err", reason)
}

// disableAccount disables an account whose endpoint is gone (Standard
// Webhooks 410): its further messages become dead letters until an
// operator enables it again.
func (d *Dispatcher) disableAccount(ctx context.Context, tenantID, accountID uuid.UUID) {
	err := db.InTenantTx(ctx, d.pool, tenantID, func(tx pgx.Tx) error {
		_, err := db.AccountSetStatus(ctx, tx, tenantID, accountID, db.AccountDisabled)
		return err
	})
	d.cfg.Accounts.Forget(accountID)
	if err != nil {
		d.cfg.Logger.Error("disable account whose endpoint is gone", "account_id", accountID, "err", err)
		return
	}
	d.cfg.Logger.Warn("account disabled: its endpoint answered 410 Gone", "tenant_id", tenantID, "account_id", accountID)
}

// outboundMessage builds the adapter's message from a claimed row.
func outboundMessage(c *db.ClaimCandidate) (*channels.OutboundMessage, error) {
	msg := &channels.OutboundMessage{
		MessageID:      c.ID,
		Attempt:        c.AttemptNo,
		IdempotencyKey: attemptKey(c.ID, c.AttemptNo),
		SeriesKey:      seriesKey(c.ID, c.SeriesFirstAttempt),
		ConversationID: c.ConversationID,
		ThreadID:       c.ThreadID,
		Text:           c.Text,
	}
	if r := outbox.ReactionOf(c.RichContent); r != nil {
		msg.Reaction = &channels.OutboundReaction{MessageID: r.MessageID, Emoji: r.Emoji, Remove: r.Remove}
		return msg, nil
	}
	if len(c.RichContent) > 0 {
		var rc envelope.RichContent
		if err := json.Unmarshal(c.RichContent, &rc); err != nil {
			return nil, fmt.Errorf("stored rich_content: %w", err)
		}
		msg.RichContent = &rc
	}
	if len(c.Attachments) > 0 {
		if err := json.Unmarshal(c.Attachments, &msg.Attachments); err != nil {
			return nil, fmt.Errorf("stored attachments: %w", err)
		}
	}
	return msg, nil
}

// waitSendSlot waits for one of the process's MaxSends provider calls, at
// most DispatchConfig.slotWait. The row is claimed and leased: one that
// waited longer could outlive its lease unsent, be resumed by another job
// and then be sent by both. Every slot busy that long means a slow
// provider under a deep backlog (a job sends up to outbox.JobGroupRows
// rows at once); the row is then left as it is — nothing recorded, resumed
// after its lease with the same key, as after a crash.
func (d *Dispatcher) waitSendSlot(ctx context.Context) error {
	wait := d.cfg.slotWait()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case d.sends <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("%w within %s", errNoSendSlot, wait)
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errShutdown, ctx.Err())
	}
}
