package teams

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
)

const (
	opReact   = "teams: add reaction"
	opUnreact = "teams: remove reaction"
)

var _ channels.Reactor = (*outbound)(nil)

// reactionTypes maps the emoji of Teams' classic reactions to their
// reaction types; any other emoji is taken as a Teams reaction type as it
// is ("1f440_eyes", "launch").
var reactionTypes = map[string]string{
	"👍": "like", "❤️": "heart", "❤": "heart", "😆": "laugh", "😂": "laugh",
	"😮": "surprised", "😢": "sad", "😠": "angry",
}

// React adds (PUT) or removes (DELETE) the bot's reaction on an activity
// of the conversation, at its service URL:
//
//	PUT|DELETE {base}/v3/conversations/{conversation}/activities/{activity}/reactions/{type}
//
// (agent reactions, a public developer preview of the Bot Framework).
// The emoji is Teams' reaction type (reactionTypes maps the classic six
// from their emoji). The result names the activity reacted to.
func (o *outbound) React(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	op, method := opReact, http.MethodPut
	if msg != nil && msg.Reaction != nil && msg.Reaction.Remove {
		op, method = opUnreact, http.MethodDelete
	}
	if msg == nil || strings.TrimSpace(msg.ConversationID) == "" || msg.Reaction == nil || msg.Reaction.MessageID == "" {
		return nil, channels.Permanent(op, errors.New("no conversation, activity or reaction"))
	}
	r := msg.Reaction
	kind := strings.Trim(strings.TrimSpace(r.Emoji), ":")
	if t, ok := reactionTypes[kind]; ok {
		kind = t
	}
	if kind == "" {
		return nil, channels.Permanent(op, errors.New("no emoji"))
	}
	endpoint := o.activities(ctx, msg.ConversationID) + "/" + url.PathEscape(r.MessageID) + "/reactions/" + url.PathEscape(kind)
	if _, err := o.call(ctx, op, method, endpoint, nil); err != nil {
		return nil, err
	}
	return &channels.SendResult{ProviderMessageID: r.MessageID}, nil
}
