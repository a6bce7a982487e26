package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// defaultRetryAfter is the wait when Slack rate-limits without a
// Retry-After header.
const defaultRetryAfter = time.Second

// Slack ok:false error codes worth retrying; every other code is permanent
// (invalid_auth, channel_not_found, not_in_channel, is_archived,
// msg_too_long, no_text, invalid_blocks, cant_update_message,
// edit_window_closed, message_not_found, ...).
var (
	rateLimitedCodes = map[string]bool{"rate_limited": true, "ratelimited": true}
	transientCodes   = map[string]bool{
		"internal_error":      true,
		"fatal_error":         true,
		"service_unavailable": true,
		"request_timeout":     true,
	}
)

// expiredCodes are the ok:false codes of a call made with a token Slack
// no longer takes: with a rotating grant, the token is renewed once and
// the call made again.
var expiredCodes = map[string]bool{"token_expired": true, "invalid_auth": true}

// outbound sends and edits messages of one Slack account with its bot token
// (chat.postMessage, chat.update). Slack honours no idempotency key.
type outbound struct {
	apiBase string
	client  *http.Client
	tokens  channels.TokenSource
	// renewed: tokens come from a rotating grant.
	renewed bool
}

var _ channels.Editor = (*outbound)(nil)

// postMessage is the chat.postMessage body.
type postMessage struct {
	Channel  string `json:"channel"`
	Text     string `json:"text"`
	ThreadTS string `json:"thread_ts,omitempty"`
	Blocks   []any  `json:"blocks,omitempty"`
}

// updateMessage is the chat.update body. Blocks is always sent: an empty
// list clears the blocks of the original message, which chat.update would
// otherwise keep.
type updateMessage struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	Text    string `json:"text"`
	Blocks  []any  `json:"blocks"`
}

// Send posts msg with chat.postMessage. ThreadID becomes thread_ts; without
// one, ReplyToProviderID (a message ts) starts or continues that message's
// thread, Slack's closest equivalent of a quoted reply.
func (o *outbound) Send(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	const method = "chat.postMessage"
	if err := checkMessage(msg); err != nil {
		return nil, channels.Permanent("slack: "+method, err)
	}
	text, blocks, err := render(msg)
	if err != nil {
		return nil, channels.Permanent("slack: "+method, err)
	}
	threadTS := msg.ThreadID
	if threadTS == "" {
		threadTS = msg.ReplyToProviderID
	}
	return o.call(ctx, method, postMessage{Channel: msg.ConversationID, Text: text, ThreadTS: threadTS, Blocks: blocks})
}

// Edit replaces the text and blocks of message EditProviderMessageID (its
// ts) with chat.update.
func (o *outbound) Edit(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	const method = "chat.update"
	if err := checkMessage(msg); err != nil {
		return nil, channels.Permanent("slack: "+method, err)
	}
	if msg.EditProviderMessageID == "" {
		return nil, channels.Permanent("slack: "+method, errors.New("no provider message id to edit"))
	}
	text, blocks, err := render(msg)
	if err != nil {
		return nil, channels.Permanent("slack: "+method, err)
	}
	if blocks == nil {
		blocks = []any{}
	}
	res, err := o.call(ctx, method, updateMessage{Channel: msg.ConversationID, TS: msg.EditProviderMessageID, Text: text, Blocks: blocks})
	if err == nil && res.ProviderMessageID == "" {
		res.ProviderMessageID = msg.EditProviderMessageID
	}
	return res, err
}

func checkMessage(msg *channels.OutboundMessage) error {
	switch {
	case msg == nil:
		return errors.New("no message")
	case msg.ConversationID == "":
		return errors.New("no conversation (channel) id")
	}
	return nil
}

// call POSTs payload as JSON with the account's token to a Web API method
// and classifies the answer. With a rotating grant, a token Slack refuses
// as expired is renewed once and the call made again. Round-trip failures
// (network, timeout, cancelled ctx) are *channels.TransientError.
func (o *outbound) call(ctx context.Context, method string, payload any) (*channels.SendResult, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, channels.Permanent("slack: "+method, fmt.Errorf("encode: %w", err))
	}
	token, err := o.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	res, err := o.post(ctx, method, token, b)
	var apiErr *apiError
	if o.renewed && errors.As(err, &apiErr) && expiredCodes[apiErr.code] {
		if token, err = o.tokens.Renew(ctx, token); err != nil {
			return nil, err
		}
		res, err = o.post(ctx, method, token, b)
	}
	return res, err
}

// post makes one call of method with token.
func (o *outbound) post(ctx context.Context, method, token string, b []byte) (*channels.SendResult, error) {
	ans, err := channels.CallAPI(ctx, o.client, channels.APIRequest{
		Op:  "slack: " + method,
		URL: o.apiBase + "/" + method,
		Header: http.Header{
			"Authorization": {"Bearer " + token},
			"Content-Type":  {"application/json; charset=utf-8"},
		},
		Body: b,
	})
	if err != nil {
		return nil, err
	}
	status, header, body := ans.Status, ans.Header, ans.Body
	switch {
	case status == http.StatusTooManyRequests:
		return nil, rateLimited(header, fmt.Errorf("slack: %s: HTTP %d", method, status))
	case status >= 500:
		return nil, &channels.TransientError{Err: fmt.Errorf("slack: %s: HTTP %d", method, status)}
	}
	var answer struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		TS    string `json:"ts"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		if status != http.StatusOK {
			return nil, channels.Permanent("slack: "+method, fmt.Errorf("HTTP %d", status))
		}
		// A 200 that is not Slack JSON (a proxy page, a cut answer) does not
		// say whether the message was posted: retry.
		return nil, &channels.TransientError{Err: fmt.Errorf("slack: %s: malformed answer: %w", method, err)}
	}
	if !answer.OK {
		return nil, classifyCode(method, answer.Error, header)
	}
	return &channels.SendResult{ProviderMessageID: answer.TS}, nil
}

// classifyCode turns an ok:false error code into a typed error.
func classifyCode(method, code string, header http.Header) error {
	if code == "" {
		code = "unknown_error"
	}
	err := &apiError{method: method, code: code}
	switch {
	case rateLimitedCodes[code]:
		return rateLimited(header, err)
	case transientCodes[code]:
		return &channels.TransientError{Err: err}
	}
	return &channels.PermanentError{Err: err}
}

// apiError is a Web API answer with ok:false.
type apiError struct {
	method string
	code   string
}

func (e *apiError) Error() string { return "slack: " + e.method + ": " + e.code }

// rateLimited wraps err, honouring Retry-After (default
// defaultRetryAfter).
func rateLimited(header http.Header, err error) error {
	return &channels.RateLimitedError{RetryAfter: channels.RetryAfter(header, time.Now(), defaultRetryAfter), Err: err}
}

var _ channels.Reactor = (*outbound)(nil)

// reactionRequest is the reactions.add and reactions.remove body.
type reactionRequest struct {
	Channel   string `json:"channel"`
	Name      string `json:"name"`
	Timestamp string `json:"timestamp"`
}

// React adds (reactions.add) or removes (reactions.remove) the bot's
// reaction Emoji — an emoji name, with or without its colons — on the
// message whose ts is MessageID. Slack's already_reacted and no_reaction
// answers count as success: they are what a retried call that already
// went through gets.
func (o *outbound) React(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	method, done := "reactions.add", "already_reacted"
	if msg != nil && msg.Reaction != nil && msg.Reaction.Remove {
		method, done = "reactions.remove", "no_reaction"
	}
	if err := checkMessage(msg); err != nil {
		return nil, channels.Permanent("slack: "+method, err)
	}
	r := msg.Reaction
	if r == nil || r.MessageID == "" {
		return nil, channels.Permanent("slack: "+method, errors.New("no reaction or no message ts"))
	}
	name := strings.Trim(r.Emoji, ":")
	if name == "" {
		return nil, channels.Permanent("slack: "+method, errors.New("no emoji name"))
	}
	_, err := o.call(ctx, method, reactionRequest{Channel: msg.ConversationID, Name: name, Timestamp: r.MessageID})
	if ae := (*apiError)(nil); errors.As(err, &ae) && ae.code == done {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return &channels.SendResult{ProviderMessageID: r.MessageID}, nil
}
