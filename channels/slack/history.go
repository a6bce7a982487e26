package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// MaxHistoryPage is the most messages asked of conversations.history at
// once (Slack allows up to 999; apps distributed outside the Marketplace
// get 15 whatever they ask).
const MaxHistoryPage = 999

// HistoryPage reads one page of conversations.history of a conversation
// (conv, as stored): the newest messages posted after oldest and before
// latest ("" = now), both exclusive, at most limit of them, returned
// oldest first. next is "" when the window holds nothing older than the
// page; otherwise (Slack's has_more) the oldest ts the page held: read on
// with latest = next.
//
// Messages are mapped as the Events API delivers them, except for their
// source_message_id, "<channel>:<ts>" (history has no event id): a message
// that also arrives by webhook is stored once all the same, as message
// dedup is by the platform id (ts) within the conversation. Workspace
// notices (joins, topics …) are left out. The account's bot token (scope
// channels:history, groups:history, im:history, mpim:history as the
// conversation needs) and api_base_url are used. Errors are the typed set
// of channels (a 429 or ratelimited is a *channels.RateLimitedError).
func (c *Channel) HistoryPage(ctx context.Context, acct channels.Account, conv envelope.Conversation, oldest, latest string, limit int) (msgs []envelope.Message, next string, err error) {
	cfg, err := c.newOutboundConfig(acct)
	if err != nil {
		return nil, "", err
	}
	if cfg.APIBaseURL, err = c.accountAPIBase(acct); err != nil {
		return nil, "", err
	}
	q := url.Values{"channel": {conv.ID}, "limit": {strconv.Itoa(min(max(limit, 1), MaxHistoryPage))}, "inclusive": {"false"}}
	if oldest != "" {
		q.Set("oldest", oldest)
	}
	if latest != "" {
		q.Set("latest", latest)
	}
	token, err := cfg.Tokens.Token(ctx)
	if err != nil {
		return nil, "", err
	}
	const method = "conversations.history"
	ans, err := channels.CallAPI(ctx, c.client, channels.APIRequest{
		Op:        "slack: " + method,
		Method:    http.MethodGet,
		URL:       cfg.APIBaseURL + "/" + method + "?" + q.Encode(),
		Header:    http.Header{"Authorization": {"Bearer " + token}},
		MaxAnswer: 16 << 20,
	})
	if err != nil {
		return nil, "", err
	}
	switch {
	case ans.Status == http.StatusTooManyRequests:
		return nil, "", rateLimited(ans.Header, fmt.Errorf("slack: %s: HTTP %d", method, ans.Status))
	case ans.Status >= 500:
		return nil, "", &channels.TransientError{Err: fmt.Errorf("slack: %s: HTTP %d", method, ans.Status)}
	}
	var page struct {
		OK       bool              `json:"ok"`
		Error    string            `json:"error"`
		Messages []json.RawMessage `json:"messages"`
		HasMore  bool              `json:"has_more"`
	}
	if err := json.Unmarshal(ans.Body, &page); err != nil {
		return nil, "", &channels.TransientError{Err: fmt.Errorf("slack: %s: malformed answer (HTTP %d): %w", method, ans.Status, err)}
	}
	if !page.OK {
		return nil, "", classifyCode(method, page.Error, ans.Header)
	}
	in := &inbound{ch: c, cfg: cfg, accountID: acct.ID.String()}
	for _, raw := range page.Messages {
		m, ts, ok := in.historyMessage(ctx, conv, raw)
		if ts != "" && (next == "" || compareTS(ts, next) < 0) {
			next = ts
		}
		if ok {
			msgs = append(msgs, m)
		}
	}
	if !page.HasMore {
		next = ""
	}
	slices.SortFunc(msgs, func(a, b envelope.Message) int { return compareTS(a.PlatformMessageID, b.PlatformMessageID) })
	return msgs, next, nil
}

// historyMessage maps one message of conversations.history; ok is false
// for what MIO does not store (notices, malformed entries). ts is the
// entry's ts whenever it has one.
func (in *inbound) historyMessage(ctx context.Context, conv envelope.Conversation, raw json.RawMessage) (_ envelope.Message, ts string, ok bool) {
	var ev messageEvent
	if err := json.Unmarshal(raw, &ev); err != nil || ev.TS == "" {
		return envelope.Message{}, "", false
	}
	if !storedSubtypes[ev.Subtype] || ev.Subtype == "message_changed" || ev.Subtype == "message_deleted" {
		return envelope.Message{}, ev.TS, false
	}
	ev.Channel = conv.ID
	m, err := in.message(ctx, outerPayload{EventID: HistorySourceID(conv.ID, ev.TS), TeamID: ev.Team}, &ev)
	if err != nil {
		return envelope.Message{}, ev.TS, false
	}
	if conv.Type != "" {
		m.Conversation.Type = conv.Type
	}
	m.Raw = raw
	return m, ev.TS, true
}

// HistorySourceID is the source_message_id of a message read from
// history: "<channel>:<ts>".
func HistorySourceID(channel, ts string) string { return channel + ":" + ts }

// compareTS orders Slack timestamps ("1700000000.000100"; by length, then
// text).
func compareTS(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
