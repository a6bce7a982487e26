package teams

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
)

// Outbound defaults.
const (
	// DefaultRetryAfter is the wait after a 429 without Retry-After.
	DefaultRetryAfter = 2 * time.Second
	opSend            = "teams: send activity"
	opEdit            = "teams: update activity"
	opDelete          = "teams: delete activity"
	opTyping          = "teams: typing"
)

// outbound sends activities through the Bot Connector REST API with
// client-credentials tokens, at the conversation's service URL: the
// trusted serviceUrl of its latest activity this process received, else
// the account's api_base_url:
//
//	POST   {base}/v3/conversations/{conversation}/activities              send
//	POST   {base}/v3/conversations/{conversation}/activities/{activity}   reply in a thread
//	PUT    {base}/v3/conversations/{conversation}/activities/{activity}   edit
//	DELETE {base}/v3/conversations/{conversation}/activities/{activity}   delete
//	PUT|DELETE …/activities/{activity}/reactions/{type}                   react (react.go)
//
// A 401 renews the token once and sends again.
type outbound struct {
	apiBase  string
	client   *http.Client
	tokens   channels.TokenSource
	tenant   uuid.UUID
	account  uuid.UUID
	services *serviceURLs
	trusted  trustedHosts
}

var (
	_ channels.Outbound = (*outbound)(nil)
	_ channels.Editor   = (*outbound)(nil)
	_ channels.Deleter  = (*outbound)(nil)
	_ channels.Typer    = (*outbound)(nil)
)

// Send posts msg to ConversationID; with a ThreadID (else a
// ReplyToProviderID) it replies to that activity, which in a Teams
// channel posts into its thread. ProviderMessageID is the answer's id.
func (o *outbound) Send(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	if msg == nil || strings.TrimSpace(msg.ConversationID) == "" {
		return nil, channels.Permanent(opSend, errors.New("no conversation id"))
	}
	act, err := render(msg)
	if err != nil {
		return nil, channels.Permanent(opSend, err)
	}
	endpoint := o.activities(ctx, msg.ConversationID)
	if to := cmp.Or(msg.ThreadID, msg.ReplyToProviderID); to != "" {
		endpoint += "/" + url.PathEscape(to)
		act.ReplyToID = to
	}
	resp, err := o.call(ctx, opSend, http.MethodPost, endpoint, act)
	if err != nil {
		return nil, err
	}
	return &channels.SendResult{ProviderMessageID: activityID(resp.Body)}, nil
}

// Edit replaces the text and card of activity EditProviderMessageID.
func (o *outbound) Edit(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	if msg == nil || strings.TrimSpace(msg.ConversationID) == "" || msg.EditProviderMessageID == "" {
		return nil, channels.Permanent(opEdit, errors.New("no conversation or activity id"))
	}
	act, err := render(msg)
	if err != nil {
		return nil, channels.Permanent(opEdit, err)
	}
	act.ID = msg.EditProviderMessageID
	endpoint := o.activities(ctx, msg.ConversationID) + "/" + url.PathEscape(msg.EditProviderMessageID)
	resp, err := o.call(ctx, opEdit, http.MethodPut, endpoint, act)
	if err != nil {
		return nil, err
	}
	return &channels.SendResult{ProviderMessageID: cmp.Or(activityID(resp.Body), msg.EditProviderMessageID)}, nil
}

// Delete deletes activity providerMessageID of conversationID.
func (o *outbound) Delete(ctx context.Context, conversationID, providerMessageID string) error {
	if strings.TrimSpace(conversationID) == "" || providerMessageID == "" {
		return channels.Permanent(opDelete, errors.New("no conversation or activity id"))
	}
	_, err := o.call(ctx, opDelete, http.MethodDelete, o.activities(ctx, conversationID)+"/"+url.PathEscape(providerMessageID), nil)
	return err
}

// Typing sends a typing activity to the conversation.
func (o *outbound) Typing(ctx context.Context, sig *channels.TypingSignal) error {
	if sig == nil || strings.TrimSpace(sig.ConversationID) == "" {
		return channels.Permanent(opTyping, errors.New("no conversation id"))
	}
	_, err := o.call(ctx, opTyping, http.MethodPost, o.activities(ctx, sig.ConversationID), &outActivity{Type: "typing"})
	return err
}

// activities is the activities URL of a conversation, at its service URL.
func (o *outbound) activities(ctx context.Context, conversationID string) string {
	base := o.apiBase
	if o.services != nil {
		conv, _, _ := strings.Cut(conversationID, ";messageid=")
		if u, ok := o.services.lookup(ctx, o.tenant, o.account, conv); ok && o.trusted.trusts(u) {
			base = u
		}
	}
	return base + "/v3/conversations/" + url.PathEscape(conversationID) + "/activities"
}

// call sends one request with the account's token, renewing it once
// after a 401, and classifies the answer.
func (o *outbound) call(ctx context.Context, op, method, endpoint string, act *outActivity) (*channels.APIAnswer, error) {
	var body []byte
	if act != nil {
		b, err := json.Marshal(act)
		if err != nil {
			return nil, channels.Permanent(op, fmt.Errorf("encode: %w", err))
		}
		body = b
	}
	token, err := o.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	req := channels.APIRequest{Op: op, Method: method, URL: endpoint, Body: body,
		Header: http.Header{"Authorization": {"Bearer " + token}}}
	resp, err := channels.CallAPI(ctx, o.client, req)
	if err == nil && resp.Status == http.StatusUnauthorized {
		// The token expired early or was revoked: renew it once.
		if token, err = o.tokens.Renew(ctx, token); err != nil {
			return nil, err
		}
		req.Header = http.Header{"Authorization": {"Bearer " + token}}
		resp, err = channels.CallAPI(ctx, o.client, req)
	}
	if err != nil {
		return nil, err
	}
	return resp, classify(op, resp)
}

// classify maps the Bot Connector's answer: 2xx is success, 429 rate
// limited (Retry-After honoured), 5xx transient, anything else (400, a
// second 401, 403 — the bot is not in the conversation —, 404)
// permanent.
func classify(op string, resp *channels.APIAnswer) error {
	if resp.Status >= 200 && resp.Status < 300 {
		return nil
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(resp.Body, &e) // error bodies may not be JSON
	apiErr := &apiError{op: op, status: resp.Status, code: boundText(e.Error.Code), message: boundText(e.Error.Message)}
	switch {
	case resp.Status == http.StatusTooManyRequests:
		return &channels.RateLimitedError{RetryAfter: channels.RetryAfter(resp.Header, time.Now(), DefaultRetryAfter), Err: apiErr}
	case resp.Status >= 500:
		return &channels.TransientError{Err: apiErr}
	}
	return &channels.PermanentError{Err: apiErr}
}

// activityID reads the id of a ResourceResponse; empty when absent.
func activityID(answer []byte) string {
	var r struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(answer, &r) != nil {
		return ""
	}
	return r.ID
}

// apiError is a Bot Connector error answer ({"error":{"code","message"}}).
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
