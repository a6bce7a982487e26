package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/tracing"
)

// consumerRequest is the body of PUT /v1/consumers/{name}.
type consumerRequest struct {
	Filter struct {
		ChannelTypes    []string    `json:"channel_types"`
		AccountIDs      []uuid.UUID `json:"account_ids"`
		ConversationIDs []string    `json:"conversation_ids"`
	} `json:"filter"`
	DeliverPolicy string     `json:"deliver_policy"`
	StartTime     *time.Time `json:"start_time"`
	AckWait       Duration   `json:"ack_wait"`
	// MaxDeliver and MaxAckPending: absent means the default; an
	// explicit 0 is refused like any value out of range.
	MaxDeliver    *int   `json:"max_deliver"`
	MaxAckPending *int   `json:"max_ack_pending"`
	Ordering      string `json:"ordering"`
	Stage         string `json:"stage"`
}

// consumerResponse is a consumer's settings and live statistics.
type consumerResponse struct {
	Name   string `json:"name"`
	Filter struct {
		ChannelTypes    []string    `json:"channel_types"`
		AccountIDs      []uuid.UUID `json:"account_ids"`
		ConversationIDs []string    `json:"conversation_ids"`
	} `json:"filter"`
	DeliverPolicy string        `json:"deliver_policy"`
	StartTime     *time.Time    `json:"start_time,omitempty"`
	AckWait       Duration      `json:"ack_wait"`
	MaxDeliver    int           `json:"max_deliver"`
	MaxAckPending int           `json:"max_ack_pending"`
	Ordering      string        `json:"ordering"`
	Stage         string        `json:"stage"`
	CreatedAt     time.Time     `json:"created_at"`
	UpdatedAt     time.Time     `json:"updated_at"`
	Stats         consumerStats `json:"stats"`
}

type consumerStats struct {
	// Pending counts messages waiting to be delivered, exactly (no cap):
	// matching messages not yet taken plus deliveries waiting to be
	// redelivered — mio.queue_health's pending.
	Pending          int64      `json:"pending"`
	AckPending       int64      `json:"ack_pending"`
	Redelivered      int64      `json:"redelivered"`
	Dead             int64      `json:"dead"`
	OldestPendingAge Duration   `json:"oldest_pending_age"`
	LastDelivered    *time.Time `json:"last_delivered_at,omitempty"`
}

func consumerJSON(info *consume.Info) *consumerResponse {
	c := info.Consumer
	r := &consumerResponse{Name: c.Name, DeliverPolicy: c.DeliverPolicy, StartTime: c.StartTime, AckWait: Duration(c.AckWait),
		MaxDeliver: c.MaxDeliver, MaxAckPending: c.MaxAckPending, Ordering: c.Ordering, Stage: c.Stage,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	r.Filter.ChannelTypes, r.Filter.AccountIDs, r.Filter.ConversationIDs = c.FilterChannelTypes, c.FilterAccountIDs, c.FilterConversationIDs
	r.Stats = consumerStats{Pending: info.Stats.Pending, AckPending: info.Stats.AckPending,
		Redelivered: info.Stats.Redelivered, Dead: info.Stats.Dead, OldestPendingAge: Duration(info.Stats.OldestPendingAge),
		LastDelivered: c.LastDeliveredAt}
	return r
}

func (s *Server) putConsumer(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var req consumerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		badRequest(w, err)
		return
	}
	if req.MaxDeliver != nil && *req.MaxDeliver == 0 {
		writeError(w, http.StatusBadRequest, "bad_request", "max_deliver must be from 1 to 1000 (omit it for the default, 5)")
		return
	}
	if req.MaxAckPending != nil && *req.MaxAckPending == 0 {
		writeError(w, http.StatusBadRequest, "bad_request", "max_ack_pending must be from 1 to 100000 (omit it for the default, 1000)")
		return
	}
	cfg := consume.Config{
		ChannelTypes: req.Filter.ChannelTypes, AccountIDs: req.Filter.AccountIDs, ConversationIDs: req.Filter.ConversationIDs,
		DeliverPolicy: req.DeliverPolicy, StartTime: req.StartTime, AckWait: time.Duration(req.AckWait),
		MaxDeliver: deref(req.MaxDeliver), MaxAckPending: deref(req.MaxAckPending), Ordering: req.Ordering, Stage: req.Stage,
	}
	var (
		info    *consume.Info
		created bool
		err     error
	)
	// If-None-Match: * creates only (RFC 9110 §13.1.2): an existing
	// consumer is 412 and stays as it is. No other entity tag is served.
	switch inm := r.Header.Get("If-None-Match"); inm {
	case "":
		info, created, err = s.consumers.Put(r.Context(), p.TenantID, chi.URLParam(r, "name"), cfg)
	case "*":
		info, err = s.consumers.Create(r.Context(), p.TenantID, chi.URLParam(r, "name"), cfg)
		created = err == nil
	default:
		writeError(w, http.StatusBadRequest, "bad_request", "If-None-Match: only * (create, never update) is supported")
		return
	}
	if errors.Is(err, consume.ErrExists) {
		writeError(w, http.StatusPreconditionFailed, "precondition_failed", "a consumer by this name exists (If-None-Match: *); it was left unchanged")
		return
	}
	if err != nil {
		s.consumerError(w, r, "put consumer", err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, consumerJSON(info))
}

func (s *Server) getConsumer(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	info, err := s.consumers.Get(r.Context(), p.TenantID, chi.URLParam(r, "name"))
	if err != nil {
		s.consumerError(w, r, "get consumer", err)
		return
	}
	writeJSON(w, http.StatusOK, consumerJSON(info))
}

func (s *Server) deleteConsumer(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	if err := s.consumers.Delete(r.Context(), p.TenantID, chi.URLParam(r, "name")); err != nil {
		s.consumerError(w, r, "delete consumer", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type pullRequest struct {
	Batch *int     `json:"batch"`
	Wait  Duration `json:"wait"`
}

func (s *Server) pull(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	req := pullRequest{}
	if err := decodeJSON(w, r, &req); err != nil {
		badRequest(w, err)
		return
	}
	batch := 10
	if req.Batch != nil {
		batch = *req.Batch
	}
	if batch < 1 || batch > consume.MaxBatch {
		writeError(w, http.StatusBadRequest, "bad_request", "batch must be from 1 to 1000")
		return
	}
	wait := time.Duration(req.Wait)
	if wait < 0 || wait > consume.MaxWait {
		writeError(w, http.StatusBadRequest, "bad_request", "wait must be from 0s to 60s")
		return
	}
	ctx, span := tracing.Child(r.Context(), "receive", trace.SpanKindClient)
	ds, err := s.consumers.Pull(ctx, p.TenantID, chi.URLParam(r, "name"), batch, wait)
	if span.IsRecording() {
		receiveSpan(span, chi.URLParam(r, "name"), ds, err)
	}
	span.End()
	if err != nil {
		s.consumerError(w, r, "pull", err)
		return
	}
	writePull(w, ds)
}

// receiveSpan describes a pull (a messaging "receive"): the consumer, how
// many messages, and a link to each message's trace (the SDK keeps the
// first 128).
func receiveSpan(span trace.Span, consumer string, ds []consume.Delivery, err error) {
	span.SetAttributes(attribute.String("messaging.system", tracing.System),
		attribute.String("messaging.operation.type", "receive"),
		attribute.String("messaging.destination.subscription.name", consumer),
		attribute.Int("messaging.batch.message_count", len(ds)))
	for _, d := range ds {
		if sc := tracing.Remote(string(d.Traceparent)); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc})
		}
	}
	if err != nil {
		span.SetStatus(codes.Error, "pull failed")
	}
}

// writePull writes the pull answer by hand: the messages are already JSON
// (stored envelopes), and re-validating 100 of them through encoding/json
// costs more than the rest of the handler.
func writePull(w http.ResponseWriter, ds []consume.Delivery) {
	size := 32
	for _, d := range ds {
		size += len(d.Message) + 128
	}
	b := make([]byte, 0, size)
	b = append(b, `{"deliveries":[`...)
	for i, d := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"delivery_id":"`...)
		b = append(b, d.DeliveryID.String()...)
		b = append(b, `","seq":`...)
		b = strconv.AppendInt(b, d.Seq, 10)
		b = append(b, `,"delivery_count":`...)
		b = strconv.AppendInt(b, int64(d.DeliveryCount), 10)
		if len(d.Traceparent) > 0 {
			b = append(b, `,"traceparent":"`...)
			b = append(b, d.Traceparent...)
			b = append(b, '"')
		}
		b = append(b, `,"message":`...)
		if len(d.Message) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, d.Message...)
		}
		b = append(b, '}')
	}
	b = append(b, "]}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

type settleRequest struct {
	DeliveryIDs []uuid.UUID `json:"delivery_ids"`
	Delay       Duration    `json:"delay"`
	Reason      string      `json:"reason"`
}

// settle serves /ack, /nak, /term and /extend.
func (s *Server) settle(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		var req settleRequest
		if err := decodeJSON(w, r, &req); err != nil {
			badRequest(w, err)
			return
		}
		if len(req.DeliveryIDs) == 0 || len(req.DeliveryIDs) > consume.MaxBatch {
			writeError(w, http.StatusBadRequest, "bad_request", "delivery_ids must hold 1 to 1000 ids")
			return
		}
		if action != consume.ActionNak && req.Delay != 0 {
			writeError(w, http.StatusBadRequest, "bad_request", "delay is only accepted by nak")
			return
		}
		if action != consume.ActionTerm && req.Reason != "" {
			writeError(w, http.StatusBadRequest, "bad_request", "reason is only accepted by term")
			return
		}
		if req.Delay < 0 || time.Duration(req.Delay) > 12*time.Hour {
			writeError(w, http.StatusBadRequest, "bad_request", "delay must be from 0s to 12h")
			return
		}
		if len(req.Reason) > 1000 {
			writeError(w, http.StatusBadRequest, "bad_request", "reason is limited to 1000 bytes")
			return
		}
		res, err := s.consumers.Settle(r.Context(), p.TenantID, chi.URLParam(r, "name"), action, req.DeliveryIDs,
			consume.SettleOptions{Delay: time.Duration(req.Delay), Reason: req.Reason})
		if err != nil {
			s.consumerError(w, r, action, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"results": res})
	}
}

func (s *Server) consumerError(w http.ResponseWriter, r *http.Request, what string, err error) {
	var ve *consume.ValidationError
	switch {
	case errors.As(err, &ve):
		writeError(w, http.StatusBadRequest, "bad_request", ve.Reason)
	case errors.Is(err, consume.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no such consumer")
	default:
		s.dbError(w, r, what, err)
	}
}

// deref is *p, or 0 when p is nil.
func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
