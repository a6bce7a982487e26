package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/envelope"
)

// ClientBackend is a Backend calling a MIO server's /v1 API with one API
// token (`mio mcp`): the server checks the token's roles and tenant.
type ClientBackend struct {
	c *client.Client
}

// NewClientBackend returns a backend over c.
func NewClientBackend(c *client.Client) *ClientBackend { return &ClientBackend{c: c} }

var _ Backend = (*ClientBackend)(nil)

// apiError turns the server's error answer into an *Error with its code
// and message, and a failure to reach the server into an unavailable
// *Error saying so (the client's errors name the method and path, never
// the token).
func apiError(err error) error {
	var ae *client.APIError
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if !errors.As(err, &ae) {
		return Errorf(CodeUnavailable, "MIO could not be reached (%v); call again later", err)
	}
	code := ae.Code
	switch ae.Status {
	case http.StatusUnauthorized:
		code = CodeForbidden
		if ae.Message == "" {
			ae.Message = "the API token was refused"
		}
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		code = CodeUnavailable
	}
	if code == "" {
		code = CodeUnavailable
	}
	msg := ae.Message
	if msg == "" {
		msg = http.StatusText(ae.Status)
	}
	return &Error{Code: code, Message: msg}
}

// ConsumerAckWait implements Backend.
func (b *ClientBackend) ConsumerAckWait(ctx context.Context, consumer string) (time.Duration, error) {
	info, err := b.c.GetConsumer(ctx, consumer)
	if err != nil {
		return 0, apiError(err)
	}
	return time.Duration(info.AckWait), nil
}

// CreateConsumer implements Backend: create-only, so a consumer
// configured between the pull that found none and this call — a PUT
// racing the agent's first pull — is used as it is, never overwritten.
func (b *ClientBackend) CreateConsumer(ctx context.Context, consumer string) (time.Duration, error) {
	info, err := b.c.CreateConsumer(ctx, consumer, client.ConsumerConfig{DeliverPolicy: CreatedDeliverPolicy, Ordering: CreatedOrdering})
	if errors.Is(err, client.ErrConsumerExists) {
		return b.ConsumerAckWait(ctx, consumer)
	}
	if err != nil {
		return 0, apiError(err)
	}
	return time.Duration(info.AckWait), nil
}

// Pull implements Backend.
func (b *ClientBackend) Pull(ctx context.Context, consumer string, max int, wait time.Duration) ([]Leased, error) {
	ds, err := b.c.Pull(ctx, consumer, max, wait)
	if err != nil {
		return nil, apiError(err)
	}
	out := make([]Leased, len(ds))
	for i := range ds {
		out[i] = Leased{DeliveryID: ds[i].DeliveryID, DeliveryCount: ds[i].DeliveryCount, Message: &ds[i].Message,
			Traceparent: ds[i].Traceparent}
	}
	return out, nil
}

// Settle implements Backend.
func (b *ClientBackend) Settle(ctx context.Context, consumer string, action Action, ids []uuid.UUID, delay time.Duration) ([]SettleResult, error) {
	var (
		res []client.SettleResult
		err error
	)
	switch action {
	case ActionAck:
		res, err = b.c.Ack(ctx, consumer, ids...)
	case ActionNak:
		res, err = b.c.Nak(ctx, consumer, delay, ids...)
	default:
		res, err = b.c.Extend(ctx, consumer, ids...)
	}
	if err != nil {
		return nil, apiError(err)
	}
	out := make([]SettleResult, len(res))
	for i, r := range res {
		out[i] = SettleResult{DeliveryID: r.DeliveryID.String(), OK: r.OK, Error: r.Error}
	}
	return out, nil
}

// Reply implements Backend.
func (b *ClientBackend) Reply(ctx context.Context, consumer string, deliveryID uuid.UUID, cmd envelope.SendCommand) (*Sent, error) {
	s, err := b.c.Reply(ctx, consumer, deliveryID, cmd)
	if err != nil {
		return nil, apiError(err)
	}
	return &Sent{ID: s.ID, HandoffState: s.HandoffState}, nil
}

// Send implements Backend.
func (b *ClientBackend) Send(ctx context.Context, cmd envelope.SendCommand) (*Sent, error) {
	s, err := b.c.Send(ctx, cmd)
	if err != nil {
		return nil, apiError(err)
	}
	return &Sent{ID: s.ID, HandoffState: s.HandoffState}, nil
}

// React implements Backend.
func (b *ClientBackend) React(ctx context.Context, cmd envelope.ReactionCommand) (*Sent, error) {
	s, err := b.c.React(ctx, cmd)
	if err != nil {
		return nil, apiError(err)
	}
	return &Sent{ID: s.ID, HandoffState: s.HandoffState}, nil
}

// StreamAppend implements Backend.
func (b *ClientBackend) StreamAppend(ctx context.Context, id uuid.UUID, seq int, delta string) error {
	if err := b.c.StreamAppend(ctx, id, seq, delta); err != nil {
		return apiError(err)
	}
	return nil
}

// StreamFinish implements Backend.
func (b *ClientBackend) StreamFinish(ctx context.Context, id uuid.UUID, seq int, text *string, rich json.RawMessage) error {
	if err := b.c.StreamFinish(ctx, id, client.StreamFinish{Seq: seq, Text: text, RichContent: rich}); err != nil {
		return apiError(err)
	}
	return nil
}

// SendStatus implements Backend.
func (b *ClientBackend) SendStatus(ctx context.Context, id uuid.UUID) (*Outbound, error) {
	o, err := b.c.GetOutbound(ctx, id)
	if err != nil {
		return nil, apiError(err)
	}
	return outboundOfClient(o), nil
}

func outboundOfClient(o *client.Outbound) *Outbound {
	return &Outbound{ID: o.ID, IdempotencyKey: o.IdempotencyKey, AccountID: o.AccountID, ChannelType: o.ChannelType,
		ConversationID: o.ConversationID, ThreadID: o.ThreadID, Text: o.Text, RichContent: o.RichContent,
		Attachments: o.Attachments, EditOf: o.EditOf, HandoffState: o.HandoffState, ProviderState: o.ProviderState,
		Attempt: o.Attempt, LastError: o.LastError, ProviderMessageID: o.ProviderMessageID, NextAttemptAt: o.NextAttemptAt,
		CreatedAt: o.CreatedAt, HandedOffAt: o.HandedOffAt, DeadAt: o.DeadAt}
}

// Typing implements Backend.
func (b *ClientBackend) Typing(ctx context.Context, accountID uuid.UUID, conversationID, threadID string) (string, string, error) {
	r, err := b.c.Typing(ctx, accountID, conversationID, threadID)
	if err != nil {
		return "", "", apiError(err)
	}
	return r.Status, r.Error, nil
}

// Message implements Backend.
func (b *ClientBackend) Message(ctx context.Context, id uuid.UUID) (*envelope.Message, error) {
	m, err := b.c.GetMessage(ctx, id)
	if err != nil {
		return nil, apiError(err)
	}
	return m, nil
}

// History implements Backend.
func (b *ClientBackend) History(ctx context.Context, q HistoryQuery) (*HistoryPage, error) {
	p, err := b.c.ConversationMessages(ctx, q.AccountID, q.ConversationID, q.Limit, q.Before)
	if err != nil {
		return nil, apiError(err)
	}
	out := &HistoryPage{Items: make([]HistoryItem, len(p.Items)), NextCursor: p.NextCursor}
	for i, it := range p.Items {
		out.Items[i] = HistoryItem{At: it.At, Message: it.Message}
		if it.Outbound != nil {
			out.Items[i].Outbound = outboundOfClient(it.Outbound)
		}
	}
	return out, nil
}

// Attachment implements Backend.
func (b *ClientBackend) Attachment(ctx context.Context, id uuid.UUID) (*AttachmentData, error) {
	a, err := b.c.Attachment(ctx, id, MaxAttachmentBytes)
	if errors.Is(err, client.ErrAttachmentTooLarge) {
		return nil, Errorf(CodeBadRequest, "the attachment is over %d MiB: fetch it with GET /v1/attachments/%s instead", MaxAttachmentBytes>>20, id)
	}
	if err != nil {
		return nil, apiError(err)
	}
	return &AttachmentData{MimeType: a.MimeType, Data: a.Data}, nil
}
