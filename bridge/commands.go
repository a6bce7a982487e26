package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// CommandQueue is the queue group of the command subscribers: one process
// of the deployment handles each command.
const CommandQueue = "mio-outbound-cmd"

// CommandReply answers a SendCommand published on
// mio.outbound_cmd.<account_id>: the outbound id as POST /v1/outbound
// answers it, or the error with the HTTP API's codes.
type CommandReply struct {
	ID           uuid.UUID        `json:"id,omitzero"`
	HandoffState db.HandoffState  `json:"handoff_state,omitempty"`
	Replayed     bool             `json:"replayed,omitempty"`
	Error        *CommandReplyErr `json:"error,omitempty"`
}

// CommandReplyErr is a refused command's error: code is bad_request,
// conflict or unavailable (retry).
type CommandReplyErr struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ServeCommands subscribes to mio.outbound_cmd.* until ctx is done. A
// command is the JSON of POST /v1/outbound; header Mio-Tenant-Id names the
// tenant (row-level security applies: another tenant's account is not
// found), Nats-Msg-Id is the idempotency key when the body has none, and
// the subject's account must be the command's. It enters the outbox
// through the same service as the HTTP path: the same validation and
// idempotency, one transaction, nothing written on an error.
func (b *Bridge) ServeCommands(ctx context.Context, svc *outbox.Service) error {
	sub, err := b.nc.QueueSubscribe(SubjectOutboundCmd+".*", CommandQueue, func(m *nats.Msg) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		reply := b.command(cctx, svc, m)
		if m.Reply == "" {
			return
		}
		data, _ := json.Marshal(reply)
		if err := m.Respond(data); err != nil {
			b.log.Warn("bridge: command reply", "err", err)
		}
	})
	if err != nil {
		return fmt.Errorf("nats: subscribe %s.*: %w", SubjectOutboundCmd, err)
	}
	<-ctx.Done()
	_ = sub.Unsubscribe()
	return nil
}

func badCommand(format string, args ...any) *CommandReply {
	return &CommandReply{Error: &CommandReplyErr{Code: "bad_request", Message: fmt.Sprintf(format, args...)}}
}

// command decodes, checks and sends one command.
func (b *Bridge) command(ctx context.Context, svc *outbox.Service, m *nats.Msg) *CommandReply {
	account, err := uuid.Parse(strings.TrimPrefix(m.Subject, SubjectOutboundCmd+"."))
	if err != nil {
		return badCommand("subject must be %s.<account_id>", SubjectOutboundCmd)
	}
	tenant, err := uuid.Parse(m.Header.Get(HeaderTenantID))
	if err != nil {
		return badCommand("header %s must name the tenant", HeaderTenantID)
	}
	var cmd envelope.SendCommand
	dec := json.NewDecoder(bytes.NewReader(m.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cmd); err != nil || dec.More() {
		return badCommand("body must be one SendCommand JSON object")
	}
	if cmd.AccountID == uuid.Nil {
		cmd.AccountID = account
	}
	if cmd.AccountID != account {
		return badCommand("account_id %s is not the subject's account %s", cmd.AccountID, account)
	}
	if key := m.Header.Get(nats.MsgIdHdr); key != "" {
		if cmd.IdempotencyKey != "" && cmd.IdempotencyKey != key {
			return badCommand("idempotency_key and %s differ", nats.MsgIdHdr)
		}
		cmd.IdempotencyKey = key
	}
	sent, err := svc.Send(ctx, tenant, &cmd)
	var invalid *outbox.ValidationError
	switch {
	case errors.As(err, &invalid):
		return badCommand("%s", invalid.Error())
	case errors.Is(err, outbox.ErrKeyConflict):
		return &CommandReply{Error: &CommandReplyErr{Code: "conflict", Message: err.Error()}}
	case err != nil:
		b.log.Warn("bridge: command", "tenant_id", tenant, "err", err)
		return &CommandReply{Error: &CommandReplyErr{Code: "unavailable", Message: "could not enqueue the message; nothing was written, retry"}}
	}
	return &CommandReply{ID: sent.ID, HandoffState: sent.HandoffState, Replayed: sent.Replayed}
}
