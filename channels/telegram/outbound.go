package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// Outbound defaults.
const (
	// defaultRetryAfter is the wait when a 429 names none.
	defaultRetryAfter = time.Second
	// defaultSendTimeout bounds a send whose ctx has no deadline.
	defaultSendTimeout = 30 * time.Second
	// maxOutboundBody bounds how much of a Bot API answer is read.
	maxOutboundBody = 1 << 20
)

// outbound sends and edits messages of one bot (sendMessage,
// editMessageText). The Bot API honours no idempotency key. Text is sent
// without parse_mode, so it is shown exactly as given.
type outbound struct {
	apiBase string
	client  *http.Client
	token   string
}

var _ channels.Editor = (*outbound)(nil)

// sendMessageRequest is the sendMessage body.
type sendMessageRequest struct {
	ChatID          any              `json:"chat_id"` // int64, or "@channelusername"
	Text            string           `json:"text"`
	MessageThreadID int64            `json:"message_thread_id,omitempty"`
	ReplyParameters *replyParameters `json:"reply_parameters,omitempty"`
	ReplyMarkup     *inlineKeyboard  `json:"reply_markup,omitempty"`
}

// replyParameters quotes a message. The reply is still sent when the quoted
// message was deleted meanwhile.
type replyParameters struct {
	MessageID                int64 `json:"message_id"`
	AllowSendingWithoutReply bool  `json:"allow_sending_without_reply"`
}

// editMessageTextRequest is the editMessageText body.
type editMessageTextRequest struct {
	ChatID      any             `json:"chat_id"`
	MessageID   int64           `json:"message_id"`
	Text        string          `json:"text"`
	ReplyMarkup *inlineKeyboard `json:"reply_markup,omitempty"`
}

// apiAnswer is every Bot API answer: {"ok":true,"result":…} or
// {"ok":false,"error_code","description","parameters"?}.
type apiAnswer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		MigrateToChatID int64   `json:"migrate_to_chat_id"`
		RetryAfter      float64 `json:"retry_after"`
	} `json:"parameters"`
}

// Send posts msg with sendMessage. When Telegram answers that the group
// became a supergroup (parameters.migrate_to_chat_id), the message is sent
// once more to the new chat, and SendResult.ConversationID reports it.
func (o *outbound) Send(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	const method = "sendMessage"
	req, err := newSendMessage(msg)
	if err != nil {
		return nil, permanent(method, err)
	}
	status, header, ans, err := o.call(ctx, method, req)
	if err != nil {
		return nil, err
	}
	var migratedTo string
	if !ans.OK && ans.Parameters.MigrateToChatID != 0 {
		newID := ans.Parameters.MigrateToChatID
		migratedTo = strconv.FormatInt(newID, 10)
		req.ChatID = newID
		req.MessageThreadID = 0 // topics do not survive a migration
		if status, header, ans, err = o.call(ctx, method, req); err != nil {
			return nil, err
		}
	}
	if err := classify(method, status, header, ans); err != nil {
		return nil, err
	}
	id, err := messageID(method, ans.Result)
	if err != nil {
		return nil, err
	}
	return &channels.SendResult{ProviderMessageID: id, ConversationID: migratedTo}, nil
}

// Edit replaces the text (and inline keyboard) of message
// EditProviderMessageID with editMessageText. Telegram's "message is not
// modified" answer counts as success: it is what a retried edit that
// already went through gets.
func (o *outbound) Edit(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	const method = "editMessageText"
	send, err := newSendMessage(msg)
	if err != nil {
		return nil, permanent(method, err)
	}
	editID, err := strconv.ParseInt(msg.EditProviderMessageID, 10, 64)
	if err != nil {
		return nil, permanent(method, fmt.Errorf("provider message id %q is not a Telegram message id", msg.EditProviderMessageID))
	}
	req := editMessageTextRequest{ChatID: send.ChatID, MessageID: editID, Text: send.Text, ReplyMarkup: send.ReplyMarkup}
	status, header, ans, err := o.call(ctx, method, req)
	if err != nil {
		return nil, err
	}
	if !ans.OK && strings.Contains(strings.ToLower(ans.Description), "message is not modified") {
		return &channels.SendResult{ProviderMessageID: msg.EditProviderMessageID}, nil
	}
	if err := classify(method, status, header, ans); err != nil {
		return nil, err
	}
	id, err := messageID(method, ans.Result)
	if err != nil || id == "" {
		// result is true (not a Message) for inline messages.
		id = msg.EditProviderMessageID
	}
	return &channels.SendResult{ProviderMessageID: id}, nil
}

// newSendMessage validates msg and builds its sendMessage body.
func newSendMessage(msg *channels.OutboundMessage) (*sendMessageRequest, error) {
	if msg == nil {
		return nil, errors.New("no message")
	}
	chatID, err := parseChatID(msg.ConversationID)
	if err != nil {
		return nil, err
	}
	text, keyboard, err := render(msg)
	if err != nil {
		return nil, err
	}
	req := &sendMessageRequest{ChatID: chatID, Text: text, ReplyMarkup: keyboard}
	if msg.ThreadID != "" {
		if req.MessageThreadID, err = strconv.ParseInt(msg.ThreadID, 10, 64); err != nil {
			return nil, fmt.Errorf("thread id %q is not a message_thread_id", msg.ThreadID)
		}
	}
	if msg.ReplyToProviderID != "" {
		replyTo, err := strconv.ParseInt(msg.ReplyToProviderID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("reply-to id %q is not a Telegram message id", msg.ReplyToProviderID)
		}
		req.ReplyParameters = &replyParameters{MessageID: replyTo, AllowSendingWithoutReply: true}
	}
	return req, nil
}

// parseChatID accepts a numeric chat id or a channel's @username.
func parseChatID(s string) (any, error) {
	if id, err := strconv.ParseInt(s, 10, 64); err == nil {
		return id, nil
	}
	if len(s) > 1 && s[0] == '@' && !strings.ContainsAny(s, " /?#") {
		return s, nil
	}
	if s == "" {
		return nil, errors.New("no conversation (chat) id")
	}
	return nil, fmt.Errorf("conversation id %q is not a chat id", s)
}

// call POSTs payload to a Bot API method. It returns the HTTP status and
// headers and the decoded answer; an answer that is not Bot API JSON is
// classified here.
func (o *outbound) call(ctx context.Context, method string, payload any) (int, http.Header, *apiAnswer, error) {
	ctx, cancel := boundContext(ctx)
	defer cancel()
	b, err := json.Marshal(payload)
	if err != nil {
		return 0, nil, nil, permanent(method, fmt.Errorf("encode: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.apiBase+"/bot"+o.token+"/"+method, bytes.NewReader(b))
	if err != nil {
		return 0, nil, nil, permanent(method, errors.New("cannot build request"))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return 0, nil, nil, transportError(ctx, method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutboundBody))
	if err != nil {
		return 0, nil, nil, transportError(ctx, method, err)
	}
	var ans apiAnswer
	if err := json.Unmarshal(body, &ans); err != nil || (!ans.OK && ans.ErrorCode == 0 && ans.Description == "") {
		return 0, nil, nil, classifyStatus(method, resp.StatusCode, resp.Header)
	}
	return resp.StatusCode, resp.Header, &ans, nil
}

// classify turns an ok:false answer into a typed error: 429 is rate
// limited (parameters.retry_after, else Retry-After), 5xx transient, every
// other code (400, 403 bot blocked, 404, migrate_to_chat_id past the one
// resend) permanent.
func classify(method string, status int, header http.Header, ans *apiAnswer) error {
	if ans.OK {
		return nil
	}
	code := ans.ErrorCode
	if code == 0 {
		code = status
	}
	err := &apiError{method: method, code: code, description: ans.Description}
	switch {
	case code == http.StatusTooManyRequests || status == http.StatusTooManyRequests:
		wait, ok := seconds(ans.Parameters.RetryAfter)
		if !ok || ans.Parameters.RetryAfter == 0 {
			wait = retryAfter(header)
		}
		return &channels.RateLimitedError{RetryAfter: wait, Err: err}
	case code >= 500 || status >= 500:
		return &channels.TransientError{Err: err}
	}
	return &channels.PermanentError{Err: err}
}

// classifyStatus classifies an answer that is not Bot API JSON by its
// status. A 2xx is transient too: it does not say whether Telegram sent
// the message.
func classifyStatus(method string, status int, header http.Header) error {
	err := fmt.Errorf("telegram: %s: HTTP %d with an unreadable answer", method, status)
	switch {
	case status == http.StatusTooManyRequests:
		return &channels.RateLimitedError{RetryAfter: retryAfter(header), Err: err}
	case status >= 500 || (status >= 200 && status < 300):
		return &channels.TransientError{Err: err}
	}
	return &channels.PermanentError{Err: err}
}

// messageID reads result.message_id.
func messageID(method string, result json.RawMessage) (string, error) {
	var m struct {
		MessageID int64 `json:"message_id"`
	}
	if err := json.Unmarshal(result, &m); err != nil {
		return "", &channels.TransientError{Err: fmt.Errorf("telegram: %s: malformed result: %w", method, err)}
	}
	if m.MessageID == 0 {
		return "", nil
	}
	return strconv.FormatInt(m.MessageID, 10), nil
}

// apiError is an ok:false Bot API answer. It never holds the bot token.
type apiError struct {
	method      string
	code        int
	description string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("telegram: %s: %d %s", e.method, e.code, e.description)
}

// transportError wraps a failed round trip as transient. A cancelled or
// expired ctx is reported as such; the request URL, which holds the bot
// token, is dropped from the cause.
func transportError(ctx context.Context, method string, err error) error {
	return channels.TransportError(ctx, "telegram: "+method, err)
}

func permanent(method string, err error) error {
	return &channels.PermanentError{Err: fmt.Errorf("telegram: %s: %w", method, err)}
}

// retryAfter reads the Retry-After header, defaulting to
// defaultRetryAfter.
func retryAfter(header http.Header) time.Duration {
	if d, ok := channels.ParseRetryAfter(header.Get("Retry-After"), time.Now()); ok {
		return d
	}
	return defaultRetryAfter
}

// seconds converts a non-negative number of seconds, capped at
// channels.MaxRetryAfter.
func seconds(secs float64) (time.Duration, bool) {
	if math.IsNaN(secs) || secs < 0 {
		return 0, false
	}
	if secs >= channels.MaxRetryAfter.Seconds() {
		return channels.MaxRetryAfter, true
	}
	return time.Duration(secs * float64(time.Second)), true
}

// boundContext bounds a call whose ctx has no deadline by
// defaultSendTimeout, so a client without a timeout cannot hang a send.
func boundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultSendTimeout)
}
