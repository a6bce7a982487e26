package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// opSend prefixes every send error.
const opSend = "whatsapp: send"

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
	Reaction         *reactionBody   `json:"reaction,omitempty"`
	Context          *replyContext   `json:"context,omitempty"`
}

// reactionBody is a reaction message's reaction: an empty emoji removes
// the business's reaction.
type reactionBody struct {
	MessageID string `json:"message_id"`
	Emoji     string `json:"emoji"`
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
	if msg == nil {
		return nil, channels.Permanent(opSend, errors.New("no message"))
	}
	if strings.TrimSpace(msg.ConversationID) == "" {
		return nil, channels.Permanent(opSend, errors.New("no conversation (wa_id)"))
	}
	req, err := render(msg)
	if err != nil {
		return nil, channels.Permanent(opSend, err)
	}
	req.To = msg.ConversationID
	if msg.ReplyToProviderID != "" {
		req.Context = &replyContext{MessageID: msg.ReplyToProviderID}
	}
	return o.post(ctx, req)
}

var _ channels.Reactor = (*outbound)(nil)

// React sends a reaction message (type reaction) to the user
// ConversationID on their message MessageID (a wamid); removing sends an
// empty emoji. The result is the reaction message's own wamid.
func (o *outbound) React(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	switch {
	case msg == nil || msg.Reaction == nil:
		return nil, channels.Permanent(opSend, errors.New("no reaction"))
	case strings.TrimSpace(msg.ConversationID) == "":
		return nil, channels.Permanent(opSend, errors.New("no conversation (wa_id)"))
	case msg.Reaction.MessageID == "":
		return nil, channels.Permanent(opSend, errors.New("no message (wamid) to react to"))
	}
	r := &reactionBody{MessageID: msg.Reaction.MessageID, Emoji: msg.Reaction.Emoji}
	if msg.Reaction.Remove {
		r.Emoji = ""
	}
	return o.post(ctx, &sendRequest{MessagingProduct: "whatsapp", To: msg.ConversationID, Type: "reaction", Reaction: r})
}

// post sends one messages body and reads the wamid it was given.
func (o *outbound) post(ctx context.Context, req *sendRequest) (*channels.SendResult, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, channels.Permanent(opSend, fmt.Errorf("encode: %w", err))
	}
	resp, err := channels.CallAPI(ctx, o.client, channels.APIRequest{
		Op:     opSend,
		URL:    o.endpoint,
		Header: http.Header{"Authorization": {"Bearer " + o.token}},
		Body:   b,
	})
	if err != nil {
		return nil, err
	}
	if resp.Status >= 200 && resp.Status < 300 {
		var ok struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(resp.Body, &ok); err != nil {
			return nil, &channels.TransientError{Err: fmt.Errorf("whatsapp: send: malformed answer: %w", err)}
		}
		res := &channels.SendResult{}
		if len(ok.Messages) > 0 {
			res.ProviderMessageID = ok.Messages[0].ID
		}
		return res, nil
	}
	return nil, classify(resp.Status, resp.Header, resp.Body)
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
		return &channels.RateLimitedError{RetryAfter: channels.RetryAfter(header, time.Now(), def), Err: err}
	}
	switch {
	case transientCodes[e.Code]:
		return &channels.TransientError{Err: err}
	case permanentCodes[e.Code]:
		return &channels.PermanentError{Err: err}
	case status == http.StatusTooManyRequests:
		return &channels.RateLimitedError{RetryAfter: channels.RetryAfter(header, time.Now(), defaultRetryAfter), Err: err}
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
