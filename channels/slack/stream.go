package slack

import (
	"context"
	"errors"
	"strings"

	"github.com/miohq/mio/channels"
)

// maxStreamText is the most characters Slack takes in one markdown_text
// of chat.startStream, chat.appendStream and chat.stopStream.
const maxStreamText = 12000

var _ channels.Streamer = (*outbound)(nil)

// startStream is the chat.startStream body.
type startStream struct {
	Channel      string `json:"channel"`
	ThreadTS     string `json:"thread_ts,omitempty"`
	MarkdownText string `json:"markdown_text,omitempty"`
}

// appendStream is the chat.appendStream body; chat.stopStream takes the
// same fields, markdown_text optional.
type appendStream struct {
	Channel      string `json:"channel"`
	TS           string `json:"ts"`
	MarkdownText string `json:"markdown_text,omitempty"`
}

// Streams: replies in direct messages (channel ids starting with D) stream
// natively. Slack's AI-app streaming outside a DM needs the recipient
// user and team, which an outbound message does not name.
func (o *outbound) Streams(msg *channels.OutboundMessage) bool {
	return msg != nil && strings.HasPrefix(msg.ConversationID, "D") && msg.RichContent == nil && len(msg.Attachments) == 0
}

// StreamStart opens a stream with chat.startStream, in ThreadID's (else
// ReplyToProviderID's) thread; the stream is the message whose ts Slack
// answers.
func (o *outbound) StreamStart(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	const method = "chat.startStream"
	if err := checkMessage(msg); err != nil {
		return nil, channels.Permanent("slack: "+method, err)
	}
	if len([]rune(msg.Text)) > maxStreamText {
		return nil, channels.Permanent("slack: "+method, errors.New("text longer than 12000 characters"))
	}
	threadTS := msg.ThreadID
	if threadTS == "" {
		threadTS = msg.ReplyToProviderID
	}
	return o.call(ctx, method, startStream{Channel: msg.ConversationID, ThreadTS: threadTS, MarkdownText: msg.Text})
}

// StreamAppend appends what msg.Text adds to shown with
// chat.appendStream: Slack streams deltas, so a stream whose text is not
// known (shown.Lost) or not a prefix of msg.Text cannot go on
// (channels.ErrStreamLost).
func (o *outbound) StreamAppend(ctx context.Context, msg *channels.OutboundMessage, shown channels.StreamShown) error {
	const method = "chat.appendStream"
	if err := checkStream(msg); err != nil {
		return channels.Permanent("slack: "+method, err)
	}
	delta, ok := streamDelta(msg.Text, shown)
	if !ok {
		return channels.Permanent("slack: "+method, channels.ErrStreamLost)
	}
	if delta == "" {
		return nil
	}
	if len([]rune(delta)) > maxStreamText {
		return channels.Permanent("slack: "+method, errors.New("delta longer than 12000 characters"))
	}
	_, err := o.call(ctx, method, appendStream{Channel: msg.ConversationID, TS: msg.EditProviderMessageID, MarkdownText: delta})
	return err
}

// StreamStop ends the stream with chat.stopStream, carrying what the
// final text adds to shown. When that cannot be said as a delta (the
// stream's text is not known, the final text replaced it, rich content)
// the stream is stopped as it is and the message then shows the final
// text by chat.update; a stream already stopped (a retried final call)
// is only updated.
func (o *outbound) StreamStop(ctx context.Context, msg *channels.OutboundMessage, shown channels.StreamShown) (*channels.SendResult, error) {
	const method = "chat.stopStream"
	if err := checkStream(msg); err != nil {
		return nil, channels.Permanent("slack: "+method, err)
	}
	delta, ok := streamDelta(msg.Text, shown)
	ok = ok && msg.RichContent == nil && len(msg.Attachments) == 0 && len([]rune(delta)) <= maxStreamText
	stop := appendStream{Channel: msg.ConversationID, TS: msg.EditProviderMessageID}
	if ok {
		stop.MarkdownText = delta
	}
	res, err := o.call(ctx, method, stop)
	var perm *channels.PermanentError
	switch {
	case err == nil && ok:
		if res.ProviderMessageID == "" {
			res.ProviderMessageID = msg.EditProviderMessageID
		}
		return res, nil
	case err != nil && !errors.As(err, &perm):
		return nil, err
	}
	// Stopped without the final text, or refused (the stream had ended):
	// the message shows the final text by an edit.
	return o.Edit(ctx, msg)
}

// streamDelta is what text adds to the stream's shown text; false when
// that is not known or text does not extend it.
func streamDelta(text string, shown channels.StreamShown) (string, bool) {
	if shown.Lost || !strings.HasPrefix(text, shown.Text) {
		return "", false
	}
	return text[len(shown.Text):], true
}

func checkStream(msg *channels.OutboundMessage) error {
	if err := checkMessage(msg); err != nil {
		return err
	}
	if msg.EditProviderMessageID == "" {
		return errors.New("no stream ts")
	}
	return nil
}
