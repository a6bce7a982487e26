package teams

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/miohq/mio/channels"
)

const (
	opStream     = "teams: stream"
	opStreamStop = "teams: stream final"
)

var _ channels.Streamer = (*outbound)(nil)

// Streams: personal (one-on-one) chats, whose conversation ids start
// with "a:", stream natively; Teams streams bot messages nowhere else, so
// channel and group chat conversations are sent and edited.
func (o *outbound) Streams(msg *channels.OutboundMessage) bool {
	return msg != nil && strings.HasPrefix(msg.ConversationID, "a:")
}

// StreamStart posts the first typing activity of a stream (streaminfo
// streamType streaming, streamSequence 1) carrying msg.Text; the id Teams
// answers is the streamId of the activities after it.
func (o *outbound) StreamStart(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	if msg == nil || strings.TrimSpace(msg.ConversationID) == "" || strings.TrimSpace(msg.Text) == "" {
		return nil, channels.Permanent(opStream, errors.New("no conversation id or text"))
	}
	act := &outActivity{Type: "typing", Text: msg.Text,
		Entities: []streamInfo{{Type: "streaminfo", StreamType: "streaming", StreamSequence: 1}}}
	resp, err := o.call(ctx, opStream, http.MethodPost, o.activities(ctx, msg.ConversationID), act)
	if err != nil {
		return nil, err
	}
	id := activityID(resp.Body)
	if id == "" {
		return nil, &channels.TransientError{Err: errors.New(opStream + ": no streamId in the answer")}
	}
	return &channels.SendResult{ProviderMessageID: id}, nil
}

// StreamAppend posts the next typing activity of stream
// EditProviderMessageID, carrying the whole text so far (Teams replaces
// the text of each update) with the next streamSequence; a stream whose
// sequence is not known (shown.Lost) cannot go on.
func (o *outbound) StreamAppend(ctx context.Context, msg *channels.OutboundMessage, shown channels.StreamShown) error {
	if msg == nil || strings.TrimSpace(msg.ConversationID) == "" || msg.EditProviderMessageID == "" {
		return channels.Permanent(opStream, errors.New("no conversation or stream id"))
	}
	if shown.Lost {
		return channels.Permanent(opStream, channels.ErrStreamLost)
	}
	act := &outActivity{Type: "typing", Text: msg.Text, Entities: []streamInfo{{Type: "streaminfo",
		StreamID: msg.EditProviderMessageID, StreamType: "streaming", StreamSequence: shown.Calls + 1}}}
	_, err := o.call(ctx, opStream, http.MethodPost, o.activities(ctx, msg.ConversationID), act)
	return err
}

// StreamStop posts the final message activity of the stream (streaminfo
// streamType final) with the complete text and card; its sequence is
// left out when it is not known.
//
// Teams answers 403 to an activity of a stream that has ended: one whose
// final message it already took (a retry of a final call whose answer
// was lost) or one the user stopped with the Stop button. The streamed
// message is then updated in place to the final text and card (the
// update activity Edit sends), so the final call succeeds with the
// message showing the final text once. "Stream bot messages", error
// codes: https://learn.microsoft.com/en-us/microsoftteams/platform/bots/streaming-ux
func (o *outbound) StreamStop(ctx context.Context, msg *channels.OutboundMessage, shown channels.StreamShown) (*channels.SendResult, error) {
	if msg == nil || strings.TrimSpace(msg.ConversationID) == "" || msg.EditProviderMessageID == "" {
		return nil, channels.Permanent(opStreamStop, errors.New("no conversation or stream id"))
	}
	act, err := render(msg)
	if err != nil {
		return nil, channels.Permanent(opStreamStop, err)
	}
	info := streamInfo{Type: "streaminfo", StreamID: msg.EditProviderMessageID, StreamType: "final"}
	if !shown.Lost {
		info.StreamSequence = shown.Calls + 1
	}
	act.Entities = []streamInfo{info}
	resp, err := o.call(ctx, opStreamStop, http.MethodPost, o.activities(ctx, msg.ConversationID), act)
	if ended(err) {
		return o.Edit(ctx, msg)
	}
	if err != nil {
		return nil, err
	}
	return &channels.SendResult{ProviderMessageID: cmp.Or(activityID(resp.Body), msg.EditProviderMessageID)}, nil
}

// ended reports whether err is Teams' answer to an activity of a stream
// that is over: HTTP 403, which the Teams SDKs treat as the end of the
// stream.
func ended(err error) bool {
	var e *apiError
	return errors.As(err, &e) && e.status == http.StatusForbidden
}
