package zohocliq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// defaultSendTimeout bounds a send whose ctx has no deadline.
	defaultSendTimeout = 30 * time.Second
	// maxOutboundBody bounds how much of an API answer is read.
	maxOutboundBody = 1 << 20
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
	token   string
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
	ctx, cancel := boundContext(ctx)
	defer cancel()
	if msg == nil {
		return nil, permanent(errors.New("no message"))
	}
	if strings.TrimSpace(msg.ConversationID) == "" {
		return nil, permanent(errors.New("no conversation (chat) id"))
	}
	body, err := render(msg)
	if err != nil {
		return nil, permanent(err)
	}
	body.ReplyTo = msg.ReplyToProviderID
	body.SyncMessage = true
	b, err := json.Marshal(body)
	if err != nil {
		return nil, permanent(fmt.Errorf("encode: %w", err))
	}
	endpoint := o.apiBase + "/api/v3/chats/" + url.PathEscape(msg.ConversationID) + "/messages"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, permanent(errors.New("cannot build request"))
	}
	req.Header.Set("Authorization", "Zoho-oauthtoken "+o.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxOutboundBody))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return &channels.SendResult{ProviderMessageID: messageID(answer)}, nil
	}
	var e struct {
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(answer, &e) // error bodies may not be JSON
	apiErr := &apiError{status: resp.StatusCode, message: e.Message}
	if e.Code != nil {
		apiErr.code = fmt.Sprint(e.Code)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait, ok := channels.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if !ok {
			wait = DefaultRateLimitLock
		}
		return nil, &channels.RateLimitedError{RetryAfter: wait, Err: apiErr}
	case resp.StatusCode >= 500:
		return nil, &channels.TransientError{Err: apiErr}
	}
	// 400, 401 (an expired access token too), 403, 404, ...
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

// transportError wraps a failed round trip as transient. A cancelled or
// expired ctx is reported as such; the request URL is dropped from the
// cause.
func transportError(ctx context.Context, err error) error {
	return channels.TransportError(ctx, "zoho_cliq: post message", err)
}

func permanent(err error) error {
	return &channels.PermanentError{Err: fmt.Errorf("zoho_cliq: post message: %w", err)}
}

// boundContext bounds a call whose ctx has no deadline by
// defaultSendTimeout, so a client without a timeout cannot hang a send.
func boundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultSendTimeout)
}
