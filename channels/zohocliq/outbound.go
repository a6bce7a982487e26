package zohocliq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
)

// Outbound defaults.
const (
	// DefaultRateLimitLock is the wait after a 429 without Retry-After:
	// exceeding Cliq's post limit locks the user out for 10 minutes.
	DefaultRateLimitLock = 10 * time.Minute
	// opSend prefixes every send error.
	opSend = "zoho_cliq: post message"
)

// outbound posts messages to Cliq chats through the REST API v3
// (POST {base}/api/v3/chats/{chat_id}/messages) with the account's OAuth
// access token. It does not implement channels.Editor: Cliq can edit
// messages (Deluge editMessage) but its REST path is unverified, so edits
// are sent as new messages by the dispatcher. Cliq honours no idempotency
// key, and ThreadID is not used (no verified REST field for threads).
type outbound struct {
	apiBase string
	client  *http.Client
	tokens  channels.TokenSource
	// renewed: tokens come from a grant (a 401 renews once and retries);
	// else the static access_token.
	renewed bool
}

// postMessage is the v3 post-message body; card, slides and buttons are
// present only for rich content.
type postMessage struct {
	Text        string         `json:"text"`
	ReplyTo     string         `json:"reply_to,omitempty"`
	SyncMessage bool           `json:"sync_message"`
	Card        *messageCard   `json:"card,omitempty"`
	Slides      []messageSlide `json:"slides,omitempty"`
	Buttons     []messageBtn   `json:"buttons,omitempty"`
}

// Send posts msg to chat ConversationID; ReplyToProviderID becomes
// reply_to. ProviderMessageID is the answer's message_id, empty when Cliq
// does not return one.
func (o *outbound) Send(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	if msg == nil {
		return nil, channels.Permanent(opSend, errors.New("no message"))
	}
	if strings.TrimSpace(msg.ConversationID) == "" {
		return nil, channels.Permanent(opSend, errors.New("no conversation (chat) id"))
	}
	body, err := render(msg)
	if err != nil {
		return nil, channels.Permanent(opSend, err)
	}
	body.ReplyTo = msg.ReplyToProviderID
	body.SyncMessage = true
	b, err := json.Marshal(body)
	if err != nil {
		return nil, channels.Permanent(opSend, fmt.Errorf("encode: %w", err))
	}
	endpoint := o.apiBase + "/api/v3/chats/" + url.PathEscape(msg.ConversationID) + "/messages"
	token, err := o.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := o.post(ctx, endpoint, token, b)
	if err == nil && resp.Status == http.StatusUnauthorized && o.renewed {
		// The token expired early or was revoked: renew it once.
		if token, err = o.tokens.Renew(ctx, token); err != nil {
			return nil, err
		}
		resp, err = o.post(ctx, endpoint, token, b)
	}
	if err != nil {
		return nil, err
	}
	return o.answer(resp)
}

func (o *outbound) post(ctx context.Context, endpoint, token string, body []byte) (*channels.APIAnswer, error) {
	return channels.CallAPI(ctx, o.client, channels.APIRequest{
		Op:     opSend,
		URL:    endpoint,
		Header: http.Header{"Authorization": {"Zoho-oauthtoken " + token}},
		Body:   body,
	})
}

// answer classifies Cliq's answer to a post.
func (o *outbound) answer(resp *channels.APIAnswer) (*channels.SendResult, error) {
	if resp.Status >= 200 && resp.Status < 300 {
		return &channels.SendResult{ProviderMessageID: messageID(resp.Body)}, nil
	}
	var e struct {
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(resp.Body, &e) // error bodies may not be JSON
	apiErr := &apiError{status: resp.Status, message: e.Message}
	if e.Code != nil {
		apiErr.code = fmt.Sprint(e.Code)
	}
	switch {
	case resp.Status == http.StatusTooManyRequests:
		wait := channels.RetryAfter(resp.Header, time.Now(), DefaultRateLimitLock)
		return nil, &channels.RateLimitedError{RetryAfter: wait, Err: apiErr}
	case resp.Status >= 500:
		return nil, &channels.TransientError{Err: apiErr}
	case resp.Status == http.StatusUnauthorized && !o.renewed:
		return nil, &channels.PermanentError{Err: fmt.Errorf("%w: %w", channels.ErrStaticTokenRefused, apiErr)}
	}
	// 400, 401 (a renewed token refused again), 403, 404, ...
	return nil, &channels.PermanentError{Err: apiErr}
}

// messageID reads message_id (a string or a number) from a success
// answer; a missing or unreadable id is empty: the message was accepted.
func messageID(answer []byte) string {
	var m struct {
		MessageID json.RawMessage `json:"message_id"`
	}
	if json.Unmarshal(answer, &m) != nil || len(m.MessageID) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(m.MessageID, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(m.MessageID, &n) == nil {
		return n.String()
	}
	return ""
}

// apiError is a Cliq error answer ({"message":…}).
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("zoho_cliq: post message: HTTP %d", e.status)
	if e.code != "" {
		s += " " + e.code
	}
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}
