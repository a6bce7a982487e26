// Package typing sends typing ("working on it") signals to chat platforms
// for agents: best effort, at once, never through the outbox — not queued
// behind sends, never retried, never dead-lettered — and rate-limited per
// conversation so an agent that signals on every token cannot flood a
// platform. Adapters that can signal implement channels.Typer; for the
// others a signal is a documented no-op ("unsupported").
//
// Internal to MIO; not a stable API.
package typing

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
)

// Outcome is what became of a signal.
type Outcome string

// Outcomes.
const (
	// Sent: the platform accepted the signal.
	Sent Outcome = "sent"
	// Unsupported: the channel (or this account or conversation) has no
	// typing signal; nothing was sent.
	Unsupported Outcome = "unsupported"
	// Throttled: a signal for the conversation was sent less than the
	// interval ago, or the platform asked to slow down; nothing was sent.
	Throttled Outcome = "throttled"
	// Failed: the platform refused or could not be reached.
	Failed Outcome = "failed"
)

// Errors callers branch on.
var (
	// ErrAccountNotFound: no such account in the tenant.
	ErrAccountNotFound = errors.New("no such account")
	// ErrAccountDisabled: the account is not active.
	ErrAccountDisabled = errors.New("account not active")
)

// Result reports one signal.
type Result struct {
	Outcome Outcome `json:"status"`
	// Error says why a signal failed or is unsupported (no secrets).
	Error string `json:"error,omitempty"`
}

// Options configure a Service.
type Options struct {
	// Interval is the least time between two signals sent for one
	// conversation (and thread) of an account, per process. Default 4s:
	// Telegram shows "typing" for 5s, Discord for 10s.
	Interval time.Duration
	// Timeout bounds one platform call. Default 5s.
	Timeout time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Signals counts outcomes by channel_type and outcome
	// (metrics.NewTyping); nil counts nothing.
	Signals *prometheus.CounterVec
}

// Service sends typing signals.
type Service struct {
	accounts *accounts.Resolver
	opts     Options
	mu       sync.Mutex
	next     map[key]time.Time // earliest time of the next signal
}

type key struct {
	tenant, account      uuid.UUID
	conversation, thread string
}

// maxTracked bounds the throttle table; past it, entries that no longer
// throttle are dropped.
const maxTracked = 100_000

// New returns a Service resolving accounts with r.
func New(r *accounts.Resolver, opts Options) *Service {
	if opts.Interval == 0 {
		opts.Interval = 4 * time.Second
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{accounts: r, opts: opts, next: map[key]time.Time{}}
}

// Signal shows the bot as typing in conversation (and thread) of
// account. Platform failures are reported in the Result, not as errors;
// errors are ErrAccountNotFound, ErrAccountDisabled and the database's.
func (s *Service) Signal(ctx context.Context, tenantID, accountID uuid.UUID, conversation, thread string) (Result, error) {
	res, channelType, err := s.signal(ctx, tenantID, accountID, conversation, thread)
	if err == nil && s.opts.Signals != nil && channelType != "" {
		s.opts.Signals.WithLabelValues(channelType, string(res.Outcome)).Inc()
	}
	return res, err
}

func (s *Service) signal(ctx context.Context, tenantID, accountID uuid.UUID, conversation, thread string) (Result, string, error) {
	acct, err := s.accounts.Outbound(ctx, tenantID, accountID)
	if err != nil {
		if !errors.Is(err, accounts.ErrCannotSend) {
			return Result{}, "", err
		}
		if _, serr := s.accounts.Secrets(ctx, tenantID, accountID); errors.Is(serr, accounts.ErrNotFound) {
			return Result{}, "", ErrAccountNotFound
		}
		return Result{Outcome: Unsupported, Error: "the account cannot send"}, "", nil
	}
	if acct.Status != db.AccountActive {
		return Result{}, "", ErrAccountDisabled
	}
	typer, ok := acct.Outbound.(channels.Typer)
	if !ok {
		return Result{Outcome: Unsupported, Error: "channel " + acct.ChannelType + " has no typing signal"}, acct.ChannelType, nil
	}
	k := key{tenantID, accountID, conversation, thread}
	if !s.take(k) {
		return Result{Outcome: Throttled}, acct.ChannelType, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	err = typer.Typing(ctx, &channels.TypingSignal{ConversationID: conversation, ThreadID: thread})
	var rl *channels.RateLimitedError
	switch {
	case err == nil:
		return Result{Outcome: Sent}, acct.ChannelType, nil
	case errors.As(err, &rl):
		s.hold(k, rl.RetryAfter)
		return Result{Outcome: Throttled}, acct.ChannelType, nil
	case errors.Is(err, channels.ErrTypingUnsupported):
		return Result{Outcome: Unsupported, Error: err.Error()}, acct.ChannelType, nil
	}
	return Result{Outcome: Failed, Error: err.Error()}, acct.ChannelType, nil
}

// take reports whether a signal for k may go now, and if so holds the
// next one back for the interval.
func (s *Service) take(k key) bool {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Before(s.next[k]) {
		return false
	}
	if len(s.next) >= maxTracked {
		for old, t := range s.next {
			if !now.Before(t) {
				delete(s.next, old)
			}
		}
	}
	s.next[k] = now.Add(s.opts.Interval)
	return true
}

// hold keeps k's next signal back for at least d.
func (s *Service) hold(k key, d time.Duration) {
	t := s.opts.Now().Add(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.After(s.next[k]) {
		s.next[k] = t
	}
}
