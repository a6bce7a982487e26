package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// MaxHistoryPage is the most messages GET /channels/{id}/messages returns
// at once.
const MaxHistoryPage = 100

type historySettingsJSON struct {
	APIBaseURL    string `json:"api_base_url"`
	ApplicationID string `json:"application_id"`
}

// History reads one page of up to limit (at most MaxHistoryPage) messages
// of a channel (conv, as stored) posted after the message id after: the
// messages MIO stores, oldest first, as the Gateway would have delivered
// them (MESSAGE_CREATE: same dedup keys), and next, the newest id of the
// page when it was full (read on after it) or "" when the page reached
// the channel's newest message. Messages left out (the bot's own, types
// MIO does not store) still count for next. The account's settings
// api_base_url, when set, replaces the adapter's API base. Errors are the
// typed set of channels (a 429 is a *channels.RateLimitedError).
func (c *Channel) History(ctx context.Context, acct channels.Account, conv envelope.Conversation, after string, limit int) (msgs []envelope.Message, next string, err error) {
	conversationID := conv.ID
	var s historySettingsJSON
	if err := channels.DecodeObject("discord settings", acct.Settings, &s); err != nil {
		return nil, "", err
	}
	var cr credentialsJSON
	if err := channels.DecodeObject("discord credentials", acct.Credentials, &cr); err != nil {
		return nil, "", err
	}
	if cr.BotToken == "" {
		return nil, "", fmt.Errorf("%w: discord: credentials bot_token is required to read history", channels.ErrInvalidConfig)
	}
	if _, ok := parseSnowflake(conversationID); !ok {
		return nil, "", channels.Permanent("discord: history", fmt.Errorf("channel id %q is not a snowflake", conversationID))
	}
	base := c.opts.APIBaseURL
	if s.APIBaseURL != "" {
		base = strings.TrimRight(s.APIBaseURL, "/")
	}
	limit = min(max(limit, 1), MaxHistoryPage)
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	const op = "history"
	resp, err := channels.CallAPI(ctx, c.opts.HTTPClient, channels.APIRequest{
		Op:        "discord: " + op,
		Method:    http.MethodGet,
		URL:       base + "/channels/" + conversationID + "/messages?" + q.Encode(),
		Header:    http.Header{"Authorization": {"Bot " + cr.BotToken}},
		MaxAnswer: 16 << 20,
	})
	if err != nil {
		return nil, "", err
	}
	if resp.Status < 200 || resp.Status >= 300 {
		return nil, "", answerError(op, resp)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(resp.Body, &raws); err != nil {
		return nil, "", &channels.TransientError{Err: fmt.Errorf("discord: %s: malformed answer: %w", op, err)}
	}
	if len(raws) == limit {
		next = pageNewest(raws)
	}
	var out []envelope.Message
	for _, raw := range raws {
		parsed, err := ParseMessageEvent(EventMessageCreate, raw, s.ApplicationID)
		if err != nil {
			continue // not a message MIO can store; later ones still are
		}
		for _, m := range parsed.Messages {
			// REST messages carry no guild_id: the caller knows the
			// conversation.
			m.Conversation = conv
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b envelope.Message) int {
		switch {
		case snowflakeLess(a.SourceMessageID, b.SourceMessageID):
			return -1
		case snowflakeLess(b.SourceMessageID, a.SourceMessageID):
			return 1
		}
		return 0
	})
	return out, next, nil
}

// pageNewest returns the newest message id of a history page ("" when
// none has a snowflake id).
func pageNewest(raws []json.RawMessage) string {
	newest := ""
	for _, raw := range raws {
		var m struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if _, ok := parseSnowflake(m.ID); ok && snowflakeLess(newest, m.ID) {
			newest = m.ID
		}
	}
	return newest
}
