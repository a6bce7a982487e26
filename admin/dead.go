package admin

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// Dead-letter actions.
const (
	DeadRequeue = "requeue"
	DeadDiscard = "discard"
)

// DeadResult is the outcome of a requeue or discard of one dead letter.
type DeadResult struct {
	ID       uuid.UUID `json:"id"`
	TenantID uuid.UUID `json:"tenant_id"`
	// Items is how many items changed (a message dead for several
	// consumers counts once per consumer); 0 when it was no longer a dead
	// letter (requeued or discarded before: a no-op).
	Items int `json:"items"`
}

// DeadApply requeues or discards the dead letter id (in tenantID, or
// found in any tenant when uuid.Nil), with its audit row in the same
// transaction. An id that is no longer a dead letter but names a known
// message is a no-op (Items 0, no error): both operations are idempotent.
// An id naming nothing is db.ErrNotFound.
func (s *Service) DeadApply(ctx context.Context, action string, tenantID, id uuid.UUID) (*DeadResult, error) {
	if action != DeadRequeue && action != DeadDiscard {
		return nil, invalidf("dead letter action: want requeue or discard")
	}
	found, err := db.DeadLettersFind(ctx, s.pool, tenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		known, kerr := db.MessageKnown(ctx, s.pool, tenantID, id)
		if kerr != nil {
			return nil, kerr
		}
		if known {
			return &DeadResult{ID: id, TenantID: tenantID}, nil
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return s.deadApplyOne(ctx, action, found[0])
}

func (s *Service) deadApplyOne(ctx context.Context, action string, d *db.DeadLetter) (*DeadResult, error) {
	fn := db.DeadLetterRequeue
	if action == DeadDiscard {
		fn = db.DeadLetterDiscard
	}
	res := &DeadResult{ID: d.ID, TenantID: d.TenantID}
	err := db.InTenantTx(ctx, s.pool, d.TenantID, func(tx pgx.Tx) error {
		n, err := fn(ctx, tx, d.ID)
		if err != nil || n == 0 {
			return err
		}
		res.Items = n
		return s.audit(ctx, tx, "dead_letter."+action, d.TenantID, d.ID.String(), d, map[string]any{action + "d": n})
	})
	return res, err
}

// DeadFilter selects dead letters for a bulk action.
type DeadFilter struct {
	TenantID    uuid.UUID // uuid.Nil: every tenant
	Kind        string    // "", outbound, consumer, attachment
	ChannelType string
	// Limit caps how many are acted on (default 100, at most 1000).
	Limit int
}

// DeadApplyAll requeues or discards the dead letters matching f, newest
// first, each in its own transaction with its audit row.
func (s *Service) DeadApplyAll(ctx context.Context, action string, f DeadFilter) ([]*DeadResult, error) {
	if action != DeadRequeue && action != DeadDiscard {
		return nil, invalidf("dead letter action: want requeue or discard")
	}
	switch f.Kind {
	case "", db.DeadLetterOutbound, db.DeadLetterConsumer, "attachment":
	default:
		return nil, invalidf("kind: want outbound, consumer or attachment")
	}
	if f.Kind == "attachment" && action == DeadRequeue {
		return nil, invalidf("attachments cannot be requeued (ask the platform to resend)")
	}
	var err error
	if f.Limit, err = clampLimit(f.Limit); err != nil {
		return nil, err
	}
	items, err := db.DeadLettersList(ctx, s.pool, f.TenantID, db.DeadLetterListParams{Kind: f.Kind, ChannelType: f.ChannelType, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	out := []*DeadResult{}
	seen := map[uuid.UUID]bool{}
	for _, d := range items {
		if seen[d.ID] {
			continue // dead for several consumers: one call settles all
		}
		seen[d.ID] = true
		r, err := s.deadApplyOne(ctx, action, d)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}
