// Package reply answers a delivery exactly once in effect: the ack of a
// consumer's lease and the outbox row (with its dispatch job) of the
// answer commit in ONE transaction, so an agent that crashes — or a MIO
// that is killed — between its answer and its ack can neither answer
// twice nor ack without answering (docs/agents.md). It composes the
// consume and outbox services; it owns no table.
//
// Internal to MIO; not a stable API.
package reply

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// ErrLeaseLost: the delivery's lease is not live (expired, settled,
// redelivered) and no earlier reply under the command's idempotency key
// exists; nothing was written.
var ErrLeaseLost = consume.ErrLeaseLost

// Service replies with ack.
type Service struct {
	pool      *pgxpool.Pool
	consumers *consume.Service
	outbox    *outbox.Service
}

// New returns a Service.
func New(pool *pgxpool.Pool, consumers *consume.Service, out *outbox.Service) *Service {
	return &Service{pool: pool, consumers: consumers, outbox: out}
}

// Reply acknowledges delivery deliveryID of consumer and sends cmd, in
// one transaction of the tenant. cmd's account_id, conversation_id and
// thread_id default to the delivered message's. A replay — the same
// command under the same idempotency key after the first committed — is
// answered with the first message (Sent.Replayed) and writes nothing. A
// lost lease with no earlier reply is ErrLeaseLost; a consumer that does
// not exist is consume.ErrNotFound; errors of the send are outbox's
// (ValidationError, ErrKeyConflict, ErrEnqueue). On any error nothing is
// written.
func (s *Service) Reply(ctx context.Context, tenantID uuid.UUID, consumer string, deliveryID uuid.UUID, cmd envelope.SendCommand) (*outbox.Sent, error) {
	var sent *outbox.Sent
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		m, err := s.consumers.AckTx(ctx, tx, tenantID, consumer, deliveryID)
		if err != nil {
			return err
		}
		withDefaults(&cmd, m.AccountID, m.ConversationID, m.ThreadID)
		sent, err = s.outbox.SendTx(ctx, tx, tenantID, &cmd)
		return err
	})
	if errors.Is(err, consume.ErrLeaseLost) {
		// That transaction rolled back; the lookup runs in one of its own
		// that writes nothing.
		err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
			sent, err = s.replay(ctx, tx, tenantID, cmd)
			return err
		})
		if err != nil {
			return nil, err
		}
		return sent, nil
	}
	if err != nil {
		return nil, err
	}
	s.consumers.Acked(tenantID)
	return sent, nil
}

// replay answers a reply whose lease is gone: when the tenant already
// sent under the command's idempotency key (the first attempt committed,
// its answer was lost), the same answer; else ErrLeaseLost. Defaults are
// taken from that earlier message, which the first attempt filled in the
// same way.
func (s *Service) replay(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, cmd envelope.SendCommand) (*outbox.Sent, error) {
	if cmd.IdempotencyKey == "" {
		return nil, ErrLeaseLost
	}
	prior, err := db.OutboxGetByKey(ctx, tx, tenantID, cmd.IdempotencyKey)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrLeaseLost
	}
	if err != nil {
		return nil, fmt.Errorf("reply: idempotency key: %w", err)
	}
	withDefaults(&cmd, prior.AccountID, prior.ConversationID, prior.ThreadID)
	sent, err := s.outbox.SendTx(ctx, tx, tenantID, &cmd)
	if err != nil {
		return nil, err
	}
	if !sent.Replayed {
		// Cannot happen: the key exists in this transaction's view.
		return nil, ErrLeaseLost
	}
	return sent, nil
}

// withDefaults fills the routing cmd leaves out: the account, and the
// conversation with its thread (the thread only with the conversation:
// a reply to another conversation does not inherit a thread).
func withDefaults(cmd *envelope.SendCommand, account uuid.UUID, conversation, thread string) {
	if cmd.AccountID == uuid.Nil {
		cmd.AccountID = account
	}
	if cmd.ConversationID == "" {
		cmd.ConversationID = conversation
		if cmd.ThreadID == "" {
			cmd.ThreadID = thread
		}
	}
}
