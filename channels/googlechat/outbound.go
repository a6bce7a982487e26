package googlechat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/miohq/mio/channels"
)

// Outbound defaults.
const (
	// ReplyOption is the messageReplyOption of a reply in a thread: in
	// the thread, or a new one when it cannot be replied to.
	ReplyOption = "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"
	// MaxBackoff caps the wait after a 429 without Retry-After, which
	// doubles with each attempt from one second (Google's truncated
	// exponential backoff).
	MaxBackoff = 64 * time.Second
)

// Operation names in errors.
const (
	opSend   = "google_chat: create message"
	opEdit   = "google_chat: update message"
	opDelete = "google_chat: delete message"
)

var (
	errEmpty = errors.New("nothing to send: no text and no card")
	// spaceName and messageName are the resource names MIO addresses:
	// spaces/{space} and spaces/{space}/messages/{message}.
	spaceName   = regexp.MustCompile(`^spaces/[A-Za-z0-9_-][A-Za-z0-9_.-]*$`)
	messageName = regexp.MustCompile(`^spaces/[A-Za-z0-9_-][A-Za-z0-9_.-]*/messages/[A-Za-z0-9_-][A-Za-z0-9_.-]*$`)
	threadName  = regexp.MustCompile(`^spaces/[A-Za-z0-9_-][A-Za-z0-9_.-]*/threads/[A-Za-z0-9_-][A-Za-z0-9_.-]*$`)
)

// outbound calls the Chat REST API as the app with the account's renewed
// access tokens.
type outbound struct {
	apiBase string
	client  *http.Client
	tokens  channels.TokenSource
}

var (
	_ channels.Outbound = (*outbound)(nil)
	_ channels.Editor   = (*outbound)(nil)
	_ channels.Deleter  = (*outbound)(nil)
)

// Send creates a message in space ConversationID: POST
// /v1/{space}/messages, in thread ThreadID when set (messageReplyOption
// ReplyOption), with requestId the IdempotencyKey, so a retried attempt
// returns the message the first one created. ProviderMessageID is the
// message's resource name.
func (o *outbound) Send(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	if msg == nil {
		return nil, channels.Permanent(opSend, errors.New("no message"))
	}
	if !spaceName.MatchString(msg.ConversationID) {
		return nil, channels.Permanent(opSend, fmt.Errorf("conversation %q is not a space name (spaces/…)", boundCode(msg.ConversationID)))
	}
	body, err := render(msg)
	if err != nil {
		return nil, channels.Permanent(opSend, err)
	}
	q := url.Values{}
	if msg.ThreadID != "" {
		if !threadName.MatchString(msg.ThreadID) {
			return nil, channels.Permanent(opSend, fmt.Errorf("thread %q is not a thread name (spaces/…/threads/…)", boundCode(msg.ThreadID)))
		}
		body.Thread = &threadRef{Name: msg.ThreadID}
		q.Set("messageReplyOption", ReplyOption)
	}
	if msg.IdempotencyKey != "" {
		q.Set("requestId", msg.IdempotencyKey)
	}
	endpoint := o.apiBase + "/v1/" + msg.ConversationID + "/messages"
	if len(q) > 0 {
		endpoint += "?" + q.Encode()
	}
	res, err := o.call(ctx, opSend, http.MethodPost, endpoint, body, msg.Attempt)
	if err != nil {
		return nil, err
	}
	res.IdempotencyKey = msg.IdempotencyKey
	return res, nil
}

// Edit updates message EditProviderMessageID: PATCH /v1/{message
// name}?updateMask=text,cardsV2, so a card left out is removed.
func (o *outbound) Edit(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	if msg == nil {
		return nil, channels.Permanent(opEdit, errors.New("no message"))
	}
	if !messageName.MatchString(msg.EditProviderMessageID) {
		return nil, channels.Permanent(opEdit, fmt.Errorf("%q is not a message name (spaces/…/messages/…)", boundCode(msg.EditProviderMessageID)))
	}
	body, err := render(msg)
	if err != nil {
		return nil, channels.Permanent(opEdit, err)
	}
	endpoint := o.apiBase + "/v1/" + msg.EditProviderMessageID + "?updateMask=text,cardsV2"
	res, err := o.call(ctx, opEdit, http.MethodPatch, endpoint, body, msg.Attempt)
	if err != nil {
		return nil, err
	}
	if res.ProviderMessageID == "" {
		res.ProviderMessageID = msg.EditProviderMessageID
	}
	return res, nil
}

// Delete deletes message providerMessageID: DELETE /v1/{message name}. A
// message already gone (404) counts as deleted.
func (o *outbound) Delete(ctx context.Context, _ string, providerMessageID string) error {
	if !messageName.MatchString(providerMessageID) {
		return channels.Permanent(opDelete, fmt.Errorf("%q is not a message name (spaces/…/messages/…)", boundCode(providerMessageID)))
	}
	_, err := o.call(ctx, opDelete, http.MethodDelete, o.apiBase+"/v1/"+providerMessageID, nil, 1)
	var apiErr *apiError
	if errors.As(err, &apiErr) && apiErr.status == http.StatusNotFound {
		return nil
	}
	return err
}

// call sends one API request with the account's token; after a 401 it
// renews the token once and sends again.
func (o *outbound) call(ctx context.Context, op, method, endpoint string, body *chatMessage, attempt int) (*channels.SendResult, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, channels.Permanent(op, fmt.Errorf("encode: %w", err))
		}
	}
	token, err := o.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	do := func(token string) (*channels.APIAnswer, error) {
		return channels.CallAPI(ctx, o.client, channels.APIRequest{Op: op, Method: method, URL: endpoint,
			Header: http.Header{"Authorization": {"Bearer " + token}}, Body: b})
	}
	resp, err := do(token)
	if err == nil && resp.Status == http.StatusUnauthorized {
		// The token expired early or was revoked: renew it once.
		if token, err = o.tokens.Renew(ctx, token); err != nil {
			return nil, err
		}
		resp, err = do(token)
	}
	if err != nil {
		return nil, err
	}
	return answer(op, resp, attempt)
}

// answer classifies the API's answer: 2xx gives the message's name; 429
// is rate limited (Retry-After, else backoff by attempt); 5xx and 408
// are transient; other statuses permanent.
func answer(op string, resp *channels.APIAnswer, attempt int) (*channels.SendResult, error) {
	if resp.Status >= 200 && resp.Status < 300 {
		var m struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(resp.Body, &m) // a delete answers {}
		return &channels.SendResult{ProviderMessageID: m.Name}, nil
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	_ = json.Unmarshal(resp.Body, &e) // error bodies may not be JSON
	apiErr := &apiError{op: op, status: resp.Status, code: boundCode(e.Error.Status), message: channels.Truncate(e.Error.Message, 200)}
	switch {
	case resp.Status == http.StatusTooManyRequests:
		return nil, &channels.RateLimitedError{RetryAfter: channels.RetryAfter(resp.Header, time.Now(), backoff(attempt)), Err: apiErr}
	case resp.Status >= 500, resp.Status == http.StatusRequestTimeout:
		return nil, &channels.TransientError{Err: apiErr}
	}
	// 400, 401 (a renewed token refused again), 403, 404, ...
	return nil, &channels.PermanentError{Err: apiErr}
}

// backoff is the wait after the attempt-th 429 without Retry-After: 1 s,
// 2 s, 4 s, … up to MaxBackoff.
func backoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 7 {
		return MaxBackoff
	}
	return min(time.Second<<(attempt-1), MaxBackoff)
}

// apiError is a Chat API error answer ({"error":{code, message, status}}).
type apiError struct {
	op      string
	status  int
	code    string
	message string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", e.op, e.status)
	if e.code != "" {
		s += " " + e.code
	}
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}
