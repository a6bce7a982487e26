// Package reply answers a delivery exactly once in effect: the ack of a
// consumer's lease and the outbox row (with its dispatch job) of the
// answer commit in ONE transaction, so an agent that crashes — or a MIO
// that is killed — between its answer and its ack can neither answer
// twice nor ack without answering (docs/agents.md). It composes the
// consume and outbox services; it owns no table.
//
// Concurrent replies share transactions (group commit, as sends do): a
// group's acks cost one pipelined round trip per consumer and its sends
// outbox's fixed statements, whatever the group's size.
//
// Internal to MIO; not a stable API.
package reply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/groupcommit"
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
	// group, when started (StartGroupCommit), commits concurrent replies
	// together.
	group *groupcommit.Committer[request, *outbox.Sent]
}

// request is one reply waiting for its transaction.
type request struct {
	tenantID   uuid.UUID
	consumer   string
	deliveryID uuid.UUID
	cmd        envelope.SendCommand
}

// New returns a Service.
func New(pool *pgxpool.Pool, consumers *consume.Service, out *outbox.Service) *Service {
	return &Service{pool: pool, consumers: consumers, outbox: out}
}

// StartGroupCommit makes Reply share transactions between concurrent
// calls (cfg tunes the window, batch size and flushers). Call it once,
// before serving; stop refuses new replies, commits what is queued and
// waits.
func (s *Service) StartGroupCommit(cfg groupcommit.Config) (stop func()) {
	cfg.Unavailable = func(err error) bool {
		var refused *refusedError
		return !errors.As(err, &refused) && db.IsUnavailable(err)
	}
	if cfg.Name == "" {
		cfg.Name = "reply"
	}
	s.group = groupcommit.New(s.commitRequests, cfg)
	s.group.Start()
	return s.group.Stop
}

// Reply acknowledges delivery deliveryID of consumer and sends cmd, in
// one transaction (shared with concurrent replies under group commit).
// cmd's account_id, conversation_id and thread_id default to the
// delivered message's. A replay — the same command under the same
// idempotency key after the first committed — is answered with the first
// message (Sent.Replayed) and writes nothing. A lost lease with no
// earlier reply is ErrLeaseLost; a consumer that does not exist is
// consume.ErrNotFound; errors of the send are outbox's (ValidationError,
// ErrKeyConflict, ErrEnqueue). On any error nothing of this reply is
// written.
func (s *Service) Reply(ctx context.Context, tenantID uuid.UUID, consumer string, deliveryID uuid.UUID, cmd envelope.SendCommand) (*outbox.Sent, error) {
	req := request{tenantID: tenantID, consumer: consumer, deliveryID: deliveryID, cmd: cmd}
	var sent *outbox.Sent
	var err error
	if s.group != nil {
		sent, err = s.group.Do(ctx, req)
	} else {
		var outs []groupcommit.Outcome[*outbox.Sent]
		if outs, err = s.commitRequests(ctx, []request{req}); err == nil {
			sent, err = outs[0].Res, outs[0].Err
		}
	}
	if errors.Is(err, ErrLeaseLost) {
		// Nothing of it was written; the answer comes from a transaction
		// of its own that writes nothing.
		err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
			sent, err = s.replay(ctx, tx, tenantID, consumer, cmd)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	return sent, nil
}

// refusedError carries the error of a reply whose send was refused after
// its ack was written in the group's transaction: the transaction rolls
// back, and groupcommit retries each reply of the group alone.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "reply refused: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// commitRequests is the group-commit Func: ONE transaction, each tenant's
// replies under its own tenant setting. A reply whose lease is not live
// is answered ErrLeaseLost and written nothing while the others commit.
// A reply whose send is refused (a bad command, a key conflict) rolls the
// transaction back: alone, it is answered with that error (nothing
// written); in a group, the group is retried reply by reply.
func (s *Service) commitRequests(ctx context.Context, reqs []request) ([]groupcommit.Outcome[*outbox.Sent], error) {
	byTenant := map[uuid.UUID][]int{}
	var tenants []uuid.UUID
	for i, r := range reqs {
		if _, ok := byTenant[r.tenantID]; !ok {
			tenants = append(tenants, r.tenantID)
		}
		byTenant[r.tenantID] = append(byTenant[r.tenantID], i)
	}
	// One order for every transaction's locks (tenants, then consumers).
	slices.SortFunc(tenants, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	outs := make([]groupcommit.Outcome[*outbox.Sent], len(reqs))
	acked := map[uuid.UUID]int{}
	err := db.InTenantTx(ctx, s.pool, tenants[0], func(tx pgx.Tx) error {
		for n, tenant := range tenants {
			if n > 0 {
				if err := db.SetTenant(ctx, tx, tenant); err != nil {
					return err
				}
			}
			k, err := s.commitTenant(ctx, tx, tenant, reqs, byTenant[tenant], outs)
			if err != nil {
				return err
			}
			acked[tenant] = k
		}
		return nil
	})
	if refused := (*refusedError)(nil); errors.As(err, &refused) && len(reqs) == 1 {
		return []groupcommit.Outcome[*outbox.Sent]{{Err: refused.err}}, nil
	}
	if err != nil {
		return nil, err
	}
	for tenant, k := range acked {
		s.consumers.Acked(tenant, k)
	}
	return outs, nil
}

// commitTenant acknowledges the replies at of one tenant (their consumers
// in name order), then sends those whose lease was live, in tx. It fills
// outs and returns how many replies it acknowledged.
func (s *Service) commitTenant(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, reqs []request, at []int, outs []groupcommit.Outcome[*outbox.Sent]) (int, error) {
	byConsumer := map[string][]int{}
	var names []string
	for _, i := range at {
		c := reqs[i].consumer
		if _, ok := byConsumer[c]; !ok {
			names = append(names, c)
		}
		byConsumer[c] = append(byConsumer[c], i)
	}
	slices.Sort(names)
	var cmds []*envelope.SendCommand
	var sending []int
	for _, name := range names {
		mine := byConsumer[name]
		ids := make([]uuid.UUID, len(mine))
		for k, i := range mine {
			ids[k] = reqs[i].deliveryID
		}
		msgs, err := s.consumers.AckLiveTx(ctx, tx, tenantID, name, ids)
		if err != nil {
			return 0, fmt.Errorf("reply: ack: %w", err)
		}
		for k, i := range mine {
			if msgs[k] == nil {
				outs[i].Err = ErrLeaseLost
				continue
			}
			cmd := reqs[i].cmd
			withDefaults(&cmd, msgs[k].AccountID, msgs[k].ConversationID, msgs[k].ThreadID)
			cmds = append(cmds, &cmd)
			sending = append(sending, i)
		}
	}
	if len(cmds) == 0 {
		return 0, nil
	}
	items, err := s.outbox.SendManyTx(ctx, tx, tenantID, cmds)
	if err != nil {
		return 0, err
	}
	for k, i := range sending {
		if items[k].Err != nil {
			return 0, &refusedError{err: items[k].Err}
		}
		outs[i].Res = items[k].Sent
	}
	return len(cmds), nil
}

// replay answers a reply whose lease is gone: when the tenant already
// sent under the command's idempotency key (the first attempt committed,
// its answer was lost), the same answer; else ErrLeaseLost (or
// consume.ErrNotFound when there is no such consumer). Defaults are taken
// from that earlier message, which the first attempt filled in the same
// way.
func (s *Service) replay(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, consumer string, cmd envelope.SendCommand) (*outbox.Sent, error) {
	if _, err := db.ConsumerGet(ctx, tx, tenantID, consumer); errors.Is(err, db.ErrNotFound) {
		return nil, consume.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("reply: consumer: %w", err)
	}
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
