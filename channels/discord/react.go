package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
)

var _ channels.Reactor = (*outbound)(nil)

// React adds (PUT) or removes (DELETE) the bot's own reaction on a
// message: /channels/{channel}/messages/{message}/reactions/{emoji}/@me,
// 204 either way. Emoji is a Unicode emoji or a custom one as name:id
// (colons around it are dropped); it is URL-encoded in the path. Adding a
// reaction that is there, or removing one that is not, succeeds: a
// retried call is harmless.
func (o *outbound) React(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	op, method := "add reaction", http.MethodPut
	if msg != nil && msg.Reaction != nil && msg.Reaction.Remove {
		op, method = "remove reaction", http.MethodDelete
	}
	if err := checkMessage(msg); err != nil {
		return nil, channels.Permanent("discord: "+op, err)
	}
	r := msg.Reaction
	if r == nil {
		return nil, channels.Permanent("discord: "+op, errors.New("no reaction"))
	}
	if _, ok := parseSnowflake(r.MessageID); !ok {
		return nil, channels.Permanent("discord: "+op, fmt.Errorf("message id %q is not a snowflake", r.MessageID))
	}
	emoji := strings.TrimSuffix(strings.TrimPrefix(r.Emoji, "<"), ">")
	emoji = strings.TrimPrefix(strings.TrimPrefix(emoji, "a:"), ":")
	if emoji == "" {
		return nil, channels.Permanent("discord: "+op, errors.New("no emoji"))
	}
	resp, err := channels.CallAPI(ctx, o.client, channels.APIRequest{
		Op:     "discord: " + op,
		Method: method,
		URL: o.apiBase + "/channels/" + msg.ConversationID + "/messages/" + r.MessageID +
			"/reactions/" + url.PathEscape(emoji) + "/@me",
		Header: http.Header{"Authorization": {"Bot " + o.token}},
	})
	if err != nil {
		return nil, err
	}
	if resp.Status >= 200 && resp.Status < 300 {
		return &channels.SendResult{ProviderMessageID: r.MessageID}, nil
	}
	return nil, answerError(op, resp)
}
