package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/miohq/mio/channels"
)

// Update intake modes (settings "mode").
const (
	ModeWebhook = "webhook"
	ModePolling = "polling"
)

// Long-polling defaults.
const (
	// DefaultPollTimeout is getUpdates' timeout: how long Telegram holds
	// the request open while no update is pending.
	DefaultPollTimeout = 25 * time.Second
	// MaxPollLimit is the most updates one getUpdates returns (Bot API).
	MaxPollLimit = 100
	// maxPollAnswer bounds a getUpdates answer (100 updates).
	maxPollAnswer = 16 << 20
)

// PollConfig is an account's update intake: settings {"mode": "polling",
// "delete_webhook": true}.
type PollConfig struct {
	// Polling: MIO calls getUpdates for this bot instead of receiving
	// webhooks.
	Polling bool
	// DeleteWebhook: call deleteWebhook when polling starts.
	DeleteWebhook bool
}

// ParsePollConfig reads settings mode and delete_webhook. Errors wrap
// channels.ErrInvalidConfig.
func ParsePollConfig(settings json.RawMessage) (PollConfig, error) {
	var s struct {
		Mode          string `json:"mode"`
		DeleteWebhook bool   `json:"delete_webhook"`
	}
	if err := channels.DecodeObject("telegram settings", settings, &s); err != nil {
		return PollConfig{}, err
	}
	switch s.Mode {
	case "", ModeWebhook:
		return PollConfig{}, nil
	case ModePolling:
		return PollConfig{Polling: true, DeleteWebhook: s.DeleteWebhook}, nil
	}
	return PollConfig{}, fmt.Errorf("%w: telegram: settings mode %q, want webhook or polling", channels.ErrInvalidConfig, s.Mode)
}

// Poller long-polls getUpdates for one bot. It only talks to Telegram:
// storing a batch and its next offset together, and holding the bot's
// lease, are the caller's.
type Poller struct {
	client *http.Client
	base   string
	token  string
}

// NewPoller returns acct's poller. It needs credentials bot_token; the
// account's api_base_url applies.
func (c *Channel) NewPoller(acct channels.Account) (*Poller, error) {
	cfg, err := ParseOutboundConfig(acct)
	if err != nil {
		return nil, err
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, err
	}
	return &Poller{client: c.opts.HTTPClient, base: base, token: cfg.BotToken}, nil
}

// Batch is what one getUpdates returned.
type Batch struct {
	// Parsed are the messages of the batch's updates, each with its
	// update's JSON as Raw. Updates that are malformed or of kinds MIO does
	// not store yield none (malformed ones are listed in Ignored).
	Parsed *channels.Parsed
	// Updates counts the updates returned.
	Updates int
	// Next is the offset of the next getUpdates: the last update_id + 1,
	// or the offset asked for when no update came. Storing it confirms
	// the batch: Telegram forgets updates below the offset it is given.
	Next int64
}

// Fetch calls getUpdates(offset, timeout, limit) and parses the updates.
// A 409 (a webhook is set, or another getUpdates runs for the bot) and
// other Bot API errors come back typed like sends (channels errors).
func (p *Poller) Fetch(ctx context.Context, offset int64, timeout time.Duration, limit int) (*Batch, error) {
	if limit <= 0 || limit > MaxPollLimit {
		limit = MaxPollLimit
	}
	req := map[string]any{"offset": offset, "timeout": int(timeout / time.Second), "limit": limit,
		"allowed_updates": AllowedUpdates}
	ctx, cancel := context.WithTimeout(ctx, timeout+15*time.Second)
	defer cancel()
	ans, err := p.call(ctx, "getUpdates", req, maxPollAnswer)
	if err != nil {
		return nil, err
	}
	var updates []json.RawMessage
	if err := json.Unmarshal(ans.Result, &updates); err != nil {
		return nil, &channels.TransientError{Err: fmt.Errorf("telegram: getUpdates: result: %w", err)}
	}
	b := &Batch{Parsed: &channels.Parsed{}, Updates: len(updates), Next: offset}
	var callbacks []string
	for i, raw := range updates {
		var head struct {
			UpdateID *int64 `json:"update_id"`
		}
		if json.Unmarshal(raw, &head) != nil || head.UpdateID == nil {
			// Without an id the offset cannot move past it; Telegram
			// always sends one.
			b.Parsed.Ignored = append(b.Parsed.Ignored, fmt.Sprintf("telegram: getUpdates result[%d] has no update_id", i))
			continue
		}
		if *head.UpdateID >= b.Next {
			b.Next = *head.UpdateID + 1
		}
		parsed, callbackID, err := parseUpdate(raw)
		if err != nil {
			b.Parsed.Ignored = append(b.Parsed.Ignored, "telegram: update "+strconv.FormatInt(*head.UpdateID, 10)+" skipped: "+err.Error())
			continue
		}
		b.Parsed.Messages = append(b.Parsed.Messages, parsed.Messages...)
		if callbackID != "" {
			callbacks = append(callbacks, callbackID)
		}
	}
	if len(callbacks) > 0 {
		o := &outbound{apiBase: p.base, client: p.client, token: p.token}
		b.Parsed.AfterCommit = o.answerCallbacks(callbacks)
	}
	return b, nil
}

// AllowedUpdates are the update kinds MIO asks for (getUpdates, and what
// a webhook's setWebhook should name: Telegram leaves message_reaction
// out unless asked).
var AllowedUpdates = []string{"message", "edited_message", "channel_post", "edited_channel_post", "callback_query", "message_reaction"}

// DeleteWebhook removes the bot's webhook (pending updates are kept), so
// getUpdates is allowed.
func (p *Poller) DeleteWebhook(ctx context.Context) error {
	_, err := p.call(ctx, "deleteWebhook", map[string]any{"drop_pending_updates": false}, 0)
	return err
}

// call POSTs a Bot API method and returns its ok answer; the URL (token)
// never reaches an error.
func (p *Poller) call(ctx context.Context, method string, payload any, maxAnswer int64) (*apiAnswer, error) {
	o := &outbound{apiBase: p.base, client: p.client, token: p.token}
	status, header, ans, err := o.callLimit(ctx, method, payload, maxAnswer)
	if err != nil {
		return nil, err
	}
	if err := classify(method, status, header, ans); err != nil {
		return nil, err
	}
	return ans, nil
}
