package client

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// Sent is the server's answer to a send or a reply: the outbound
// message's id and handoff state.
type Sent struct {
	ID           uuid.UUID `json:"id"`
	HandoffState string    `json:"handoff_state"`
}

// Send queues a SendCommand (POST /v1/outbound). The same command under
// the same idempotency key answers with the first message's id.
func (c *Client) Send(ctx context.Context, cmd envelope.SendCommand) (*Sent, error) {
	var out Sent
	if err := c.do(ctx, http.MethodPost, "/v1/outbound", cmd, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// React queues a reaction to a platform message (POST /v1/reactions):
// Emoji added to — or, with Remove, taken off — message MessageID, sent
// through the outbox like a message; GetOutbound(Sent.ID) follows it. An
// account whose channel cannot react is refused (422, an *APIError).
func (c *Client) React(ctx context.Context, cmd envelope.ReactionCommand) (*Sent, error) {
	var out Sent
	if err := c.do(ctx, http.MethodPost, "/v1/reactions", cmd, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// BatchItem is one command's answer from SendBatch: Status is what POST
// /v1/outbound would have answered for it alone (202 accepted, 200 the
// same command sent before under its key, 400 refused, 409 key used for
// another command); Err is set for 400 and 409 and nothing of that
// command was written.
type BatchItem struct {
	Index        int       `json:"index"`
	Status       int       `json:"status"`
	ID           uuid.UUID `json:"id"`
	HandoffState string    `json:"handoff_state"`
	Err          *APIError `json:"-"`
}

// SendBatch queues up to 500 SendCommands in one server transaction
// (POST /v1/outbound/batch), answering each command on its own. An error
// means none was written (retry the whole batch: commands already sent
// answer 200 with their ids).
func (c *Client) SendBatch(ctx context.Context, cmds []envelope.SendCommand) ([]BatchItem, error) {
	var out struct {
		Items []struct {
			BatchItem
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"items"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/outbound/batch", map[string]any{"commands": cmds}, &out); err != nil {
		return nil, err
	}
	items := make([]BatchItem, len(out.Items))
	for i, it := range out.Items {
		items[i] = it.BatchItem
		if it.Error != nil {
			items[i].Err = &APIError{Status: it.Status, Code: it.Error.Code, Message: it.Error.Message}
		}
	}
	return items, nil
}

// Reply answers delivery deliveryID of consumer with cmd and acknowledges
// it in the same server transaction (POST /v1/consumers/{name}/reply):
// both happen or neither. cmd's AccountID, ConversationID and ThreadID
// may be left zero: they default to the delivered message's. Use an
// idempotency key derived from the message (for example "reply:" + its
// id): a retry after a lost answer then returns the first reply's id
// instead of sending twice. A lease that is no longer live answers an
// error for which IsLeaseLost is true; nothing was written.
func (c *Client) Reply(ctx context.Context, consumer string, deliveryID uuid.UUID, cmd envelope.SendCommand) (*Sent, error) {
	body := struct {
		DeliveryID uuid.UUID `json:"delivery_id"`
		envelope.SendCommand
	}{deliveryID, cmd}
	var out Sent
	if err := c.do(ctx, http.MethodPost, consumerPath(consumer)+"/reply", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// IsLeaseLost reports whether err is the server's 409 lease_lost: the
// delivery is no longer leased to the consumer.
func IsLeaseLost(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Code == "lease_lost"
}
