package mcpserver

import (
	"context"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miohq/mio/envelope"
)

func (s *server) streamStart(ctx context.Context, req *mcp.CallToolRequest, in streamStartIn) (*mcp.CallToolResult, sentOut, error) {
	cmd := envelope.SendCommand{IdempotencyKey: in.IdempotencyKey, Text: in.Text, Stream: true}
	var delivery uuid.UUID
	if in.DeliveryID != "" {
		id, err := parseID("delivery_id", in.DeliveryID)
		if err != nil {
			return nil, sentOut{}, err
		}
		delivery = id
		if cmd.IdempotencyKey == "" {
			cmd.IdempotencyKey = "stream:" + id.String()
		}
	} else {
		account, err := parseID("account_id", in.AccountID)
		if err != nil {
			return nil, sentOut{}, err
		}
		if in.ConversationID == "" {
			return nil, sentOut{}, Errorf(CodeBadRequest, "conversation_id: required without delivery_id (a message's conversation.id)")
		}
		cmd.AccountID, cmd.ConversationID, cmd.ThreadID = account, in.ConversationID, in.ThreadID
		if cmd.IdempotencyKey == "" {
			cmd.IdempotencyKey = "mcp:" + uuid.NewString()
		}
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, sentOut{}, s.fail(ctx, "stream_start", err)
	}
	var sent *Sent
	if delivery != uuid.Nil {
		sent, err = b.Reply(ctx, consumerName(in.Consumer), delivery, cmd)
		if hasCode(err, CodeLeaseLost) {
			return nil, sentOut{}, Errorf(CodeLeaseLost, "stream_start: delivery %s is no longer leased to you; nothing was "+
				"sent. Call pull_messages and answer the new delivery.", delivery)
		}
	} else {
		sent, err = b.Send(ctx, cmd)
	}
	if err != nil {
		return nil, sentOut{}, s.fail(ctx, "stream_start", err)
	}
	return nil, sentOut{OutboundID: sent.ID, HandoffState: sent.HandoffState}, nil
}

func (s *server) streamAppend(ctx context.Context, req *mcp.CallToolRequest, in streamAppendIn) (*mcp.CallToolResult, streamAppendOut, error) {
	id, err := parseID("outbound_id", in.OutboundID)
	if err != nil {
		return nil, streamAppendOut{}, err
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, streamAppendOut{}, s.fail(ctx, "stream_append", err)
	}
	if err := b.StreamAppend(ctx, id, in.Seq, in.Text); err != nil {
		return nil, streamAppendOut{}, s.fail(ctx, "stream_append", err)
	}
	return nil, streamAppendOut{OutboundID: id, Seq: in.Seq}, nil
}

func (s *server) streamFinish(ctx context.Context, req *mcp.CallToolRequest, in streamFinishIn) (*mcp.CallToolResult, streamFinishOut, error) {
	id, err := parseID("outbound_id", in.OutboundID)
	if err != nil {
		return nil, streamFinishOut{}, err
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, streamFinishOut{}, s.fail(ctx, "stream_finish", err)
	}
	if err := b.StreamFinish(ctx, id, in.Seq, in.Text, in.RichContent); err != nil {
		return nil, streamFinishOut{}, s.fail(ctx, "stream_finish", err)
	}
	return nil, streamFinishOut{OutboundID: id, Finished: true}, nil
}
