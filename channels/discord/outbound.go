package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/miohq/mio/channels"
)

// Outbound defaults.
const (
	// defaultRetryAfter is the wait when a 429 names none.
	defaultRetryAfter = time.Second
	// nonceLength is Discord's maximum message nonce length.
	nonceLength = 25
)

// outbound sends and edits channel messages as the account's bot
// (POST /channels/{id}/messages, PATCH /channels/{id}/messages/{id}).
//
// Discord has no idempotency header, but a message nonce with
// enforce_nonce makes Discord return the earlier message instead of
// creating a second one for a few minutes: the nonce is derived from the
// attempt's IdempotencyKey, so a retried attempt after a crash is not
// posted twice. Mentions are limited to users (no @everyone, @here or role
// pings from an agent's text); a reply still pings its author.
type outbound struct {
	apiBase string
	client  *http.Client
	token   string
}

var _ channels.Editor = (*outbound)(nil)

// createMessage is the Create Message body.
type createMessage struct {
	Content          string            `json:"content,omitempty"`
	Nonce            string            `json:"nonce,omitempty"`
	EnforceNonce     bool              `json:"enforce_nonce,omitempty"`
	MessageReference *messageReference `json:"message_reference,omitempty"`
	Embeds           []embed           `json:"embeds,omitempty"`
	Components       []actionRow       `json:"components,omitempty"`
	AllowedMentions  allowedMentions   `json:"allowed_mentions"`
}

// editMessage is the Edit Message body. Every field is sent so that an
// edit without rich content clears the original's embeds and components.
type editMessage struct {
	Content         string          `json:"content"`
	Embeds          []embed         `json:"embeds"`
	Components      []actionRow     `json:"components"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
}

// messageReference quotes a message; the reply is still sent when the
// quoted message was deleted meanwhile.
type messageReference struct {
	MessageID       string `json:"message_id"`
	FailIfNotExists bool   `json:"fail_if_not_exists"`
}

type allowedMentions struct {
	Parse       []string `json:"parse"`
	RepliedUser bool     `json:"replied_user"`
}

var defaultAllowedMentions = allowedMentions{Parse: []string{"users"}, RepliedUser: true}

// Send posts msg to channel ConversationID. ReplyToProviderID becomes a
// message_reference; ThreadID is not used (a Discord thread is a channel
// of its own, so it arrives as the conversation). The result's
// IdempotencyKey is the nonce sent.
func (o *outbound) Send(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	const op = "create message"
	if err := checkMessage(msg); err != nil {
		return nil, channels.Permanent("discord: "+op, err)
	}
	content, embeds, components, err := render(msg)
	if err != nil {
		return nil, channels.Permanent("discord: "+op, err)
	}
	body := createMessage{
		Content:         content,
		Embeds:          embeds,
		Components:      components,
		AllowedMentions: defaultAllowedMentions,
	}
	if msg.IdempotencyKey != "" {
		body.Nonce = nonce(msg.IdempotencyKey)
		body.EnforceNonce = true
	}
	if msg.ReplyToProviderID != "" {
		if _, ok := parseSnowflake(msg.ReplyToProviderID); !ok {
			return nil, channels.Permanent("discord: "+op, fmt.Errorf("reply-to id %q is not a snowflake", msg.ReplyToProviderID))
		}
		body.MessageReference = &messageReference{MessageID: msg.ReplyToProviderID}
	}
	res, err := o.call(ctx, op, http.MethodPost, "/channels/"+msg.ConversationID+"/messages", body)
	if err == nil {
		res.IdempotencyKey = body.Nonce
	}
	return res, err
}

// Edit replaces the content, embeds and components of message
// EditProviderMessageID.
func (o *outbound) Edit(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	const op = "edit message"
	if err := checkMessage(msg); err != nil {
		return nil, channels.Permanent("discord: "+op, err)
	}
	if _, ok := parseSnowflake(msg.EditProviderMessageID); !ok {
		return nil, channels.Permanent("discord: "+op, fmt.Errorf("provider message id %q is not a snowflake", msg.EditProviderMessageID))
	}
	content, embeds, components, err := render(msg)
	if err != nil {
		return nil, channels.Permanent("discord: "+op, err)
	}
	body := editMessage{Content: content, Embeds: embeds, Components: components, AllowedMentions: defaultAllowedMentions}
	if body.Embeds == nil {
		body.Embeds = []embed{}
	}
	if body.Components == nil {
		body.Components = []actionRow{}
	}
	res, err := o.call(ctx, op, http.MethodPatch, "/channels/"+msg.ConversationID+"/messages/"+msg.EditProviderMessageID, body)
	if err == nil && res.ProviderMessageID == "" {
		res.ProviderMessageID = msg.EditProviderMessageID
	}
	return res, err
}

func checkMessage(msg *channels.OutboundMessage) error {
	if msg == nil {
		return errors.New("no message")
	}
	if _, ok := parseSnowflake(msg.ConversationID); !ok {
		return fmt.Errorf("conversation id %q is not a channel snowflake", msg.ConversationID)
	}
	return nil
}

// nonce derives a message nonce (at most nonceLength characters) from an
// idempotency key.
func nonce(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:nonceLength]
}

// call sends payload and classifies the answer: 2xx is success (the
// message id is the answer's id), 429 rate limited (body retry_after,
// else Retry-After), 5xx transient, any other status permanent.
func (o *outbound) call(ctx context.Context, op, method, path string, payload any) (*channels.SendResult, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, channels.Permanent("discord: "+op, fmt.Errorf("encode: %w", err))
	}
	resp, err := channels.CallAPI(ctx, o.client, channels.APIRequest{
		Op:     "discord: " + op,
		Method: method,
		URL:    o.apiBase + path,
		Header: http.Header{"Authorization": {"Bot " + o.token}},
		Body:   b,
	})
	if err != nil {
		return nil, err
	}
	body := resp.Body
	if resp.Status >= 200 && resp.Status < 300 {
		var m struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, &channels.TransientError{Err: fmt.Errorf("discord: %s: malformed answer: %w", op, err)}
		}
		return &channels.SendResult{ProviderMessageID: m.ID}, nil
	}
	return nil, answerError(op, resp)
}

// answerError classifies a non-2xx answer: 429 rate limited (body
// retry_after, else Retry-After), 5xx transient, any other status
// permanent.
func answerError(op string, resp *channels.APIAnswer) error {
	body := resp.Body
	var answer struct {
		Code       int      `json:"code"`
		Message    string   `json:"message"`
		RetryAfter *float64 `json:"retry_after"`
		Global     bool     `json:"global"`
	}
	_ = json.Unmarshal(body, &answer) // 5xx bodies may be HTML
	apiErr := &apiError{op: op, status: resp.Status, code: answer.Code, message: answer.Message}
	switch {
	case resp.Status == http.StatusTooManyRequests:
		wait, ok := time.Duration(0), false
		if answer.RetryAfter != nil {
			wait, ok = channels.RetryAfterSeconds(*answer.RetryAfter)
		}
		if !ok {
			wait = channels.RetryAfter(resp.Header, time.Now(), defaultRetryAfter)
		}
		return &channels.RateLimitedError{RetryAfter: wait, Err: apiErr}
	case resp.Status >= 500:
		return &channels.TransientError{Err: apiErr}
	}
	return &channels.PermanentError{Err: apiErr}
}

// apiError is a Discord error answer ({code, message}; 50035 invalid form
// body, 10003 unknown channel, 10008 unknown message, 50001 missing
// access, 50013 missing permissions, ...).
type apiError struct {
	op      string
	status  int
	code    int
	message string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("discord: %s: HTTP %d", e.op, e.status)
	if e.code != 0 {
		s += " code " + strconv.Itoa(e.code)
	}
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}
