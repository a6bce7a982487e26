package telegram

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

// defaultRetryAfter is the wait when a 429 names none.
const defaultRetryAfter = time.Second

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
		return nil, channels.Permanent("telegram: "+method, err)
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
		return nil, channels.Permanent("telegram: "+method, err)
	}
	editID, err := strconv.ParseInt(msg.EditProviderMessageID, 10, 64)
	if err != nil {
		return nil, channels.Permanent("telegram: "+method, fmt.Errorf("provider message id %q is not a Telegram message id", msg.EditProviderMessageID))
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
//
// The request URL holds the bot token: channels.CallAPI keeps it out of
// errors.
func (o *outbound) call(ctx context.Context, method string, payload any) (int, http.Header, *apiAnswer, error) {
	return o.callLimit(ctx, method, payload, 0)
}

// callLimit is call reading at most maxAnswer bytes of the answer (0: the
// channels.CallAPI default).
func (o *outbound) callLimit(ctx context.Context, method string, payload any, maxAnswer int64) (int, http.Header, *apiAnswer, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return 0, nil, nil, channels.Permanent("telegram: "+method, fmt.Errorf("encode: %w", err))
	}
	resp, err := channels.CallAPI(ctx, o.client, channels.APIRequest{
		Op:        "telegram: " + method,
		URL:       o.apiBase + "/bot" + o.token + "/" + method,
		Body:      b,
		MaxAnswer: maxAnswer,
	})
	if err != nil {
		return 0, nil, nil, err
	}
	var ans apiAnswer
	if err := json.Unmarshal(resp.Body, &ans); err != nil || (!ans.OK && ans.ErrorCode == 0 && ans.Description == "") {
		return 0, nil, nil, classifyStatus(method, resp.Status, resp.Header)
	}
	return resp.Status, resp.Header, &ans, nil
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
		wait, ok := channels.RetryAfterSeconds(ans.Parameters.RetryAfter)
		if !ok || ans.Parameters.RetryAfter == 0 {
			wait = channels.RetryAfter(header, time.Now(), defaultRetryAfter)
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
		return &channels.RateLimitedError{RetryAfter: channels.RetryAfter(header, time.Now(), defaultRetryAfter), Err: err}
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

var _ channels.Reactor = (*outbound)(nil)

// answerCallbackQueryRequest is the answerCallbackQuery body.
type answerCallbackQueryRequest struct {
	CallbackQueryID string `json:"callback_query_id"`
}

// answerCallbacks returns the acknowledgement of callback queries made
// after their commit: answerCallbackQuery for each, so the user's client
// stops its spinner. The first error is returned after every answer was
// tried.
func (o *outbound) answerCallbacks(ids []string) func(context.Context) error {
	return func(ctx context.Context) error {
		const method = "answerCallbackQuery"
		var first error
		for _, id := range ids {
			status, header, ans, err := o.call(ctx, method, answerCallbackQueryRequest{CallbackQueryID: id})
			if err == nil {
				err = classify(method, status, header, ans)
			}
			if err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}

// setMessageReactionRequest is the setMessageReaction body; an empty
// reaction list takes the bot's reaction off.
type setMessageReactionRequest struct {
	ChatID    any            `json:"chat_id"`
	MessageID int64          `json:"message_id"`
	Reaction  []reactionType `json:"reaction"`
}

// React sets (or, with Remove, clears) the bot's reaction on a message
// with setMessageReaction. A bot has one reaction per message: setting
// one replaces the previous, and removing clears whichever is set.
func (o *outbound) React(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	const method = "setMessageReaction"
	if msg == nil || msg.Reaction == nil {
		return nil, channels.Permanent("telegram: "+method, errors.New("no reaction"))
	}
	chatID, err := parseChatID(msg.ConversationID)
	if err != nil {
		return nil, channels.Permanent("telegram: "+method, err)
	}
	r := msg.Reaction
	id, err := strconv.ParseInt(r.MessageID, 10, 64)
	if err != nil {
		return nil, channels.Permanent("telegram: "+method, fmt.Errorf("message id %q is not a Telegram message id", r.MessageID))
	}
	req := setMessageReactionRequest{ChatID: chatID, MessageID: id, Reaction: []reactionType{}}
	if !r.Remove {
		req.Reaction = []reactionType{{Type: "emoji", Emoji: r.Emoji}}
	}
	status, header, ans, err := o.call(ctx, method, req)
	if err != nil {
		return nil, err
	}
	if err := classify(method, status, header, ans); err != nil {
		return nil, err
	}
	return &channels.SendResult{ProviderMessageID: r.MessageID}, nil
}
