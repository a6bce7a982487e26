package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// Outbound defaults.
const (
	// defaultRetryAfter is the wait after a throughput limit (130429, HTTP
	// 429) without Retry-After.
	defaultRetryAfter = time.Second
	// pairRetryAfter is the wait after a pair rate limit (131056): about
	// one message per 6 s to one user.
	pairRetryAfter = 6 * time.Second
	// appThrottleRetryAfter is the wait after Graph API app or account
	// throttling (codes 4, 80007).
	appThrottleRetryAfter = time.Minute
	// defaultSendTimeout bounds a send whose ctx has no deadline.
	defaultSendTimeout = 30 * time.Second
	// maxOutboundBody bounds how much of a Graph API answer is read.
	maxOutboundBody = 1 << 20
)

// Graph API error codes and how they are classified (codes not listed go
// by HTTP status: 429 rate limited, 5xx transient, other 4xx permanent).
var (
	// rateLimitCodes map throttling codes to the default wait.
	rateLimitCodes = map[int]time.Duration{
		130429: defaultRetryAfter,     // throughput limit
		131056: pairRetryAfter,        // (business, consumer) pair rate limit
		4:      appThrottleRetryAfter, // app request limit
		80007:  appThrottleRetryAfter, // WhatsApp Business Account rate limit
	}
	transientCodes = map[int]bool{
		1:      true, // unknown API error
		2:      true, // temporary service error
		131000: true, // something went wrong
	}
	permanentCodes = map[int]bool{
		100:    true, // invalid parameter
		190:    true, // access token expired or invalid
		131008: true, // required parameter missing
		131026: true, // message undeliverable
	}
)

// outbound sends messages from one business phone number
// (POST {APIBaseURL}/{phone_number_id}/messages, Bearer access token).
//
// It does not implement channels.Editor: the Cloud API cannot edit a sent
// message, so the dispatcher sends an edit as a new message (Send ignores
// EditProviderMessageID). The Cloud API honours no idempotency key, and
// WhatsApp has no threads: ThreadID is ignored. Free-form messages are
// only delivered within 24 h of the user's last message; outside it
// Meta's error is permanent.
type outbound struct {
	endpoint string // {APIBaseURL}/{phone_number_id}/messages
	client   *http.Client
	token    string
}

// sendRequest is the messages body: a text message or an interactive
// reply-buttons message.
type sendRequest struct {
	MessagingProduct string          `json:"messaging_product"` // "whatsapp"
	To               string          `json:"to"`
	Type             string          `json:"type"` // text or interactive
	Text             *textBody       `json:"text,omitempty"`
	Interactive      *interactiveMsg `json:"interactive,omitempty"`
	Context          *replyContext   `json:"context,omitempty"`
}

type textBody struct {
	Body string `json:"body"`
}

type replyContext struct {
	MessageID string `json:"message_id"`
}

// Send sends msg to the WhatsApp user ConversationID (a wa_id); a
// ReplyToProviderID (a wamid) quotes that message.
func (o *outbound) Send(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	ctx, cancel := boundContext(ctx)
	defer cancel()
	if msg == nil {
		return nil, permanent(errors.New("no message"))
	}
	if strings.TrimSpace(msg.ConversationID) == "" {
		return nil, permanent(errors.New("no conversation (wa_id)"))
	}
	req, err := render(msg)
	if err != nil {
		return nil, permanent(err)
	}
	req.To = msg.ConversationID
	if msg.ReplyToProviderID != "" {
		req.Context = &replyContext{MessageID: msg.ReplyToProviderID}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, permanent(fmt.Errorf("encode: %w", err))
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, permanent(errors.New("cannot build request"))
	}
	httpReq.Header.Set("Authorization", "Bearer "+o.token)
	httpReq.Header.Set("Content-Type", "application/json")
	resp, err := o.client.Do(httpReq)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutboundBody))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		var ok struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &ok); err != nil {
			return nil, &channels.TransientError{Err: fmt.Errorf("whatsapp: send: malformed answer: %w", err)}
		}
		res := &channels.SendResult{}
		if len(ok.Messages) > 0 {
			res.ProviderMessageID = ok.Messages[0].ID
		}
		return res, nil
	}
	return nil, classify(resp.StatusCode, resp.Header, body)
}

// classify turns a Graph API error answer into a typed error.
func classify(status int, header http.Header, body []byte) error {
	var answer struct {
		Error struct {
			Message      string `json:"message"`
			Type         string `json:"type"`
			Code         int    `json:"code"`
			ErrorSubcode int    `json:"error_subcode"`
			ErrorData    struct {
				Details string `json:"details"`
			} `json:"error_data"`
			FBTraceID string `json:"fbtrace_id"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &answer) // 5xx bodies may not be JSON
	e := answer.Error
	err := &graphError{status: status, code: e.Code, subcode: e.ErrorSubcode, message: e.Message, details: e.ErrorData.Details, traceID: e.FBTraceID}
	if def, ok := rateLimitCodes[e.Code]; ok {
		return &channels.RateLimitedError{RetryAfter: retryAfter(header, def), Err: err}
	}
	switch {
	case transientCodes[e.Code]:
		return &channels.TransientError{Err: err}
	case permanentCodes[e.Code]:
		return &channels.PermanentError{Err: err}
	case status == http.StatusTooManyRequests:
		return &channels.RateLimitedError{RetryAfter: retryAfter(header, defaultRetryAfter), Err: err}
	case status >= 500:
		return &channels.TransientError{Err: err}
	}
	return &channels.PermanentError{Err: err}
}

// graphError is a Graph API error answer.
type graphError struct {
	status  int
	code    int
	subcode int
	message string
	details string
	traceID string
}

func (e *graphError) Error() string {
	s := fmt.Sprintf("whatsapp: send: HTTP %d", e.status)
	if e.code != 0 {
		s += " code " + strconv.Itoa(e.code)
	}
	if e.subcode != 0 {
		s += "/" + strconv.Itoa(e.subcode)
	}
	if e.message != "" {
		s += ": " + e.message
	}
	if e.details != "" {
		s += " (" + e.details + ")"
	}
	if e.traceID != "" {
		s += " fbtrace_id " + e.traceID
	}
	return s
}

// transportError wraps a failed round trip as transient. A cancelled or
// expired ctx is reported as such; the request URL is dropped from the
// cause.
func transportError(ctx context.Context, err error) error {
	return channels.TransportError(ctx, "whatsapp: send", err)
}

func permanent(err error) error {
	return &channels.PermanentError{Err: fmt.Errorf("whatsapp: send: %w", err)}
}

// retryAfter reads the Retry-After header, else def.
func retryAfter(header http.Header, def time.Duration) time.Duration {
	if d, ok := channels.ParseRetryAfter(header.Get("Retry-After"), time.Now()); ok {
		return d
	}
	return def
}

// boundContext bounds a call whose ctx has no deadline by
// defaultSendTimeout, so a client without a timeout cannot hang a send.
func boundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultSendTimeout)
}
