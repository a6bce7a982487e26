package telegram

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"github.com/miohq/mio/channels"
)

var _ channels.Streamer = (*outbound)(nil)

// draftPrefix marks a stream's provider id: a draft is no message, and
// the message is only sent by StreamStop.
const draftPrefix = "draft:"

// sendMessageDraftRequest is the sendMessageDraft body (Bot API 9.x).
type sendMessageDraftRequest struct {
	ChatID          any    `json:"chat_id"`
	DraftID         int64  `json:"draft_id"`
	Text            string `json:"text"`
	MessageThreadID int64  `json:"message_thread_id,omitempty"`
}

// Streams: private chats (a positive chat id) stream natively, as a
// draft; groups and channels are sent and edited.
func (o *outbound) Streams(msg *channels.OutboundMessage) bool {
	if msg == nil {
		return false
	}
	id, err := strconv.ParseInt(msg.ConversationID, 10, 64)
	return err == nil && id > 0
}

// StreamStart shows msg.Text as a draft with sendMessageDraft. The draft
// id is derived from the message id, so a worker resuming the stream
// goes on animating the same draft.
func (o *outbound) StreamStart(ctx context.Context, msg *channels.OutboundMessage) (*channels.SendResult, error) {
	id := draftID(msg)
	if err := o.draft(ctx, msg, id); err != nil {
		return nil, err
	}
	return &channels.SendResult{ProviderMessageID: draftPrefix + strconv.FormatInt(id, 10)}, nil
}

// StreamAppend shows msg.Text, the whole text so far, in the draft (a
// draft carries its whole text, so a resumed stream goes on).
func (o *outbound) StreamAppend(ctx context.Context, msg *channels.OutboundMessage, _ channels.StreamShown) error {
	return o.draft(ctx, msg, draftID(msg))
}

// StreamStop sends the complete final text with sendMessage: the draft
// is a preview that the message replaces.
func (o *outbound) StreamStop(ctx context.Context, msg *channels.OutboundMessage, _ channels.StreamShown) (*channels.SendResult, error) {
	m := *msg
	m.EditProviderMessageID = ""
	return o.Send(ctx, &m)
}

func (o *outbound) draft(ctx context.Context, msg *channels.OutboundMessage, id int64) error {
	const method = "sendMessageDraft"
	send, err := newSendMessage(msg)
	if err != nil {
		return channels.Permanent("telegram: "+method, err)
	}
	if strings.TrimSpace(send.Text) == "" {
		return channels.Permanent("telegram: "+method, errors.New("empty draft"))
	}
	req := sendMessageDraftRequest{ChatID: send.ChatID, DraftID: id, Text: send.Text, MessageThreadID: send.MessageThreadID}
	status, header, ans, err := o.call(ctx, method, req)
	if err != nil {
		return err
	}
	return classify(method, status, header, ans)
}

// draftID is a non-zero 31-bit id of the message's stream.
func draftID(msg *channels.OutboundMessage) int64 {
	id := int64(binary.BigEndian.Uint32(msg.MessageID[:4]) & 0x7fffffff)
	if id == 0 {
		id = 1
	}
	return id
}
