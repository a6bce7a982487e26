package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// Outbound defaults.
const (
	// DefaultRetryAfter is the wait after a 429, 502 or 504 without
	// Retry-After.
	DefaultRetryAfter = 5 * time.Second
	// SenderID is data.sender.id of every outbound delivery.
	SenderID = "mio"
	// maxOutboundBody bounds how much of an endpoint's answer is read.
	maxOutboundBody = 64 << 10
	// opDeliver prefixes every delivery error.
	opDeliver = "webhook: deliver"
)

// outbound delivers messages to one account's endpoint as signed Standard
// Webhooks. The webhook-id header is the message's SeriesKey: it is the
// same on every automatic retry and after crash recovery, so the receiver
// can drop duplicates; only an explicit resend (a new attempt series)
// sends a new one. Redirects are not followed (the Channel's client refuses
// them). The signing key is decoded from the whsec_ secret once, when the
// account's sender is built (accounts.Resolver builds it once per cache
// fill), not for every delivery.
type outbound struct {
	client   *http.Client
	now      func() time.Time
	endpoint string
	key      []byte
}

var _ channels.Editor = (*outbound)(nil)

// Send delivers msg as a message.created event. ProviderMessageID is the
// id the endpoint answers ({"id": "..."}), else the webhook-id;
// IdempotencyKey is the webhook-id sent.
func (o *outbound) Send(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	return o.deliver(ctx, EventMessageCreated, msg)
}

// Edit delivers msg as a message.updated event naming the edited message
// in data.edit_of_provider_message_id. ProviderMessageID is the id the
// endpoint answers, else the edited message's id; IdempotencyKey is the
// webhook-id sent.
func (o *outbound) Edit(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	if msg != nil && msg.EditProviderMessageID == "" {
		return nil, channels.Permanent(opDeliver, errors.New("no provider message id to edit"))
	}
	return o.deliver(ctx, EventMessageUpdated, msg)
}

func (o *outbound) deliver(ctx context.Context, event string, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	if msg == nil {
		return nil, channels.Permanent(opDeliver, errors.New("no message"))
	}
	if msg.ConversationID == "" {
		return nil, channels.Permanent(opDeliver, errors.New("no conversation id"))
	}
	if strings.TrimSpace(msg.Text) == "" && msg.RichContent == nil && len(msg.Attachments) == 0 {
		return nil, channels.Permanent(opDeliver, errors.New("empty message: no text, rich content or attachments"))
	}
	id := msg.SeriesKey
	if id == "" {
		id = "msg_" + msg.MessageID.String()
	}
	if len(id) > maxIDLength || strings.ContainsFunc(id, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return nil, channels.Permanent(opDeliver, errors.New("series key is not a valid webhook-id"))
	}
	now := o.now()
	body, err := json.Marshal(newPayload(event, now, msg))
	if err != nil {
		return nil, channels.Permanent(opDeliver, fmt.Errorf("encode: %w", err))
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	header := http.Header{}
	header.Set(HeaderID, id)
	header.Set(HeaderTimestamp, ts)
	header.Set(HeaderSignature, signature(o.key, id, ts, body))
	// The endpoint URL may carry credentials: channels.CallAPI keeps it
	// out of errors.
	resp, err := channels.CallAPI(ctx, o.client, channels.APIRequest{
		Op:        opDeliver,
		URL:       o.endpoint,
		Header:    header,
		Body:      body,
		MaxAnswer: maxOutboundBody,
	})
	if err != nil {
		return nil, err
	}
	if err := classify(resp.Status, resp.Header, o.now()); err != nil {
		return nil, err
	}
	providerID := answerID(resp.Body)
	if providerID == "" {
		providerID = id
		if event == EventMessageUpdated {
			providerID = msg.EditProviderMessageID
		}
	}
	return &channels.SendResult{ProviderMessageID: providerID, IdempotencyKey: id}, nil
}

// classify maps an endpoint's status to the Standard Webhooks sender
// rules: 2xx success; 3xx failure (redirects are not followed); 410 the
// endpoint is gone; 429, 502 and 504 throttle (Retry-After, default
// DefaultRetryAfter); other 5xx transient; anything else permanent.
func classify(status int, header http.Header, now time.Time) error {
	if status >= 200 && status < 300 {
		return nil
	}
	err := fmt.Errorf("webhook: endpoint answered HTTP %d", status)
	switch {
	case status == http.StatusGone:
		return &channels.PermanentError{Err: fmt.Errorf("webhook: endpoint answered HTTP 410: %w", channels.ErrEndpointGone)}
	case status == http.StatusTooManyRequests || status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		return &channels.RateLimitedError{RetryAfter: channels.RetryAfter(header, now, DefaultRetryAfter), Err: err}
	case status >= 500:
		return &channels.TransientError{Err: err}
	case status >= 300 && status < 400:
		return &channels.PermanentError{Err: fmt.Errorf("webhook: endpoint answered a redirect (HTTP %d), which is not followed", status)}
	}
	return &channels.PermanentError{Err: err}
}

// answerID reads a string id from a JSON object answer.
func answerID(answer []byte) string {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(answer, &m) != nil {
		return ""
	}
	switch id := m.ID.(type) {
	case string:
		return id
	case float64:
		if id == math.Trunc(id) && math.Abs(id) < 1<<53 {
			return strconv.FormatInt(int64(id), 10)
		}
	}
	return ""
}
