package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/tracing"
)

// Webhook outcomes (the outcome label of mio_gateway_inbound_latency_seconds).
const (
	outcomeAccepted     = "accepted"
	outcomeDuplicate    = "duplicate"
	outcomeHandshake    = "handshake"
	outcomeIgnored      = "ignored"
	outcomeNotFound     = "not_found"
	outcomeUnauthorized = "unauthorized"
	outcomeBadRequest   = "bad_request"
	outcomeTooLarge     = "too_large"
	outcomeUnsupported  = "unsupported_media_type"
	outcomeUnavailable  = "unavailable"
)

// webhook handles POST (and GET, for Meta's handshake)
// /webhooks/{channel_type}/{account_id}: find the account, verify,
// normalize, commit, and answer 200 only after the commit.
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	channelType := chi.URLParam(r, "channel_type")
	label := "unknown"
	outcome := outcomeNotFound
	defer func() {
		s.metrics.InboundLatency.WithLabelValues(label, outcome).Observe(time.Since(start).Seconds())
	}()

	if _, ok := s.registry.Get(channelType); !ok {
		writeError(w, http.StatusNotFound, "unknown_channel", "unknown channel type")
		return
	}
	label = channelType
	ctx, cancel := context.WithTimeout(r.Context(), s.webhookDeadline)
	defer cancel()

	id, err := uuid.Parse(chi.URLParam(r, "account_id"))
	if err != nil {
		writeError(w, http.StatusNotFound, "unknown_account", "unknown account")
		return
	}
	if r.ContentLength > s.webhookMaxBody {
		outcome = outcomeTooLarge
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "body exceeds "+strconv.FormatInt(s.webhookMaxBody, 10)+" bytes")
		return
	}
	acct, err := s.accounts.Inbound(ctx, channelType, id)
	if err != nil {
		if errors.Is(err, accounts.ErrUnknown) {
			writeError(w, http.StatusNotFound, "unknown_account", "unknown, disabled or mismatched account")
			return
		}
		outcome = outcomeUnavailable
		s.unavailable(w, r, "resolve account", err)
		return
	}
	body, err := readBody(w, r, s.webhookMaxBody)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			outcome = outcomeTooLarge
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "body exceeds "+strconv.FormatInt(s.webhookMaxBody, 10)+" bytes")
			return
		}
		outcome = outcomeBadRequest
		writeError(w, http.StatusBadRequest, "bad_body", "could not read body")
		return
	}
	req := &channels.Request{Method: r.Method, Header: r.Header, Query: r.URL.Query(), Body: body, Now: start}
	if err := s.verify(ctx, acct, req); err != nil {
		var transient *channels.TransientError
		if errors.As(err, &transient) {
			// The platform's keys could not be read (a key server down):
			// no verdict on the request, which the platform sends again.
			outcome = outcomeUnavailable
			s.unavailable(w, r, "verify", err)
			return
		}
		outcome = outcomeUnauthorized
		writeError(w, http.StatusUnauthorized, "unauthorized", "signature or token invalid")
		return
	}
	parsed, err := acct.Inbound.Parse(ctx, req)
	if err != nil {
		var bre *channels.BadRequestError
		switch {
		case errors.As(err, &bre):
			outcome = outcomeBadRequest
			writeError(w, http.StatusBadRequest, "bad_request", bre.Reason)
		case errors.Is(err, channels.ErrUnsupportedMediaType):
			outcome = outcomeUnsupported
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "unsupported content type")
		default:
			outcome = outcomeBadRequest
			writeError(w, http.StatusBadRequest, "bad_request", "payload not understood")
		}
		return
	}
	for _, why := range parsed.Ignored {
		s.log.Warn("webhook content left out", "channel_type", channelType, "account_id", acct.ID, "reason", why)
	}
	if len(parsed.Messages) == 0 && len(parsed.Statuses) == 0 {
		outcome = outcomeIgnored
		if parsed.Reply != nil {
			outcome = outcomeHandshake
		}
		s.reply(w, parsed.Reply)
		return
	}
	if tp := tracing.Traceparent(ctx); tp != "" {
		// Each message keeps this request's trace context (envelope
		// trace_id): its consumers continue the trace.
		for i := range parsed.Messages {
			parsed.Messages[i].TraceID = tp
		}
	}
	res, err := s.ingester.Ingest(ctx, ingest.Prepare(acct, parsed, body, start))
	if err != nil {
		if db.IsUnavailable(err) || errors.Is(err, ingest.ErrStopped) {
			outcome = outcomeUnavailable
			s.unavailable(w, r, "ingest", err)
			return
		}
		// The database refused the data itself: a client problem.
		outcome = outcomeBadRequest
		s.log.Warn("webhook rejected by storage", "channel_type", channelType, "err", err)
		writeError(w, http.StatusBadRequest, "unstorable", "payload could not be stored")
		return
	}
	outcome = outcomeAccepted
	if res.Duplicates > 0 {
		s.metrics.DedupTotal.WithLabelValues(channelType).Add(float64(res.Duplicates))
		if len(res.Inserted) == 0 && res.NewStatuses == 0 {
			outcome = outcomeDuplicate
		}
	}
	if n := len(res.Inserted); n > 0 {
		s.metrics.InboundMessages.WithLabelValues(channelType).Add(float64(n))
	}
	if parsed.AfterCommit != nil {
		go s.afterCommit(context.WithoutCancel(ctx), channelType, parsed.AfterCommit)
	}
	s.reply(w, parsed.Reply)
}

// verify checks the request's signature or token, in a span of its own
// when traced (a slow key server shows there).
func (s *Server) verify(ctx context.Context, acct *accounts.Account, req *channels.Request) error {
	ctx, span := tracing.Child(ctx, "verify webhook", trace.SpanKindInternal)
	err := acct.VerifyWebhook(ctx, req, time.Now())
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, "not verified")
	}
	span.End()
	return err
}

// afterCommitTimeout bounds a platform acknowledgement made after the
// commit (channels.Parsed.AfterCommit).
const afterCommitTimeout = 10 * time.Second

// afterCommit runs an adapter's post-commit acknowledgement apart from
// the request, bounded by afterCommitTimeout; a failure is logged (the
// platform's client stops waiting on its own).
func (s *Server) afterCommit(ctx context.Context, channelType string, fn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(ctx, afterCommitTimeout)
	defer cancel()
	if err := fn(ctx); err != nil {
		s.log.Warn("webhook acknowledgement after commit failed", "channel_type", channelType, "err", err)
	}
}

// readBody reads r's body, at most limit bytes (*http.MaxBytesError
// beyond). A body of announced length is read into one buffer of that
// size; io.ReadAll grows its buffer from 512 bytes, three allocations and
// copies for a 1 KB webhook.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n >= 0 && n <= limit {
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}

// webhookOK is the answer to an accepted webhook, as writeJSON would
// encode {"ok": true}, rendered once (encoding a map each time costs 6 %
// of the webhook handler's CPU).
const webhookOK = `{"ok":true}` + "\n"

func (s *Server) reply(w http.ResponseWriter, rep *channels.Reply) {
	if rep == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, webhookOK)
		return
	}
	if rep.ContentType != "" {
		w.Header().Set("Content-Type", rep.ContentType)
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(rep.Body)
}

// unavailable answers 503 with Retry-After so the platform redelivers.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	if s.clientGone(r, what, err) {
		return
	}
	s.log.Warn("webhook unavailable", "step", what, "err", err)
	w.Header().Set("Retry-After", "2")
	writeError(w, http.StatusServiceUnavailable, "unavailable", "temporarily unavailable, retry")
}
