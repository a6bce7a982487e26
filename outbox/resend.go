package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/tracing"
)

// InProgressError: a resend of a message whose handoff is not over.
type InProgressError struct {
	// State is the message's handoff state when it was read; "" when it
	// changed between that read and the resend (another resend won).
	State db.HandoffState
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("the message is still being handed off (%s)", e.State)
}

// Resend starts a new attempt series of a message whose handoff is over
// (handed_off or dead): same message id, new attempt numbers and hence
// new provider idempotency keys, at the back of its conversation's queue,
// with a new dispatch job, in one transaction of the tenant. It returns
// the series' first attempt number. ErrNotFound: no such message;
// *InProgressError: its handoff is not over.
func (s *Service) Resend(ctx context.Context, tenantID, id uuid.UUID) (attempt int, err error) {
	if s.river == nil {
		return 0, ErrNotConfigured
	}
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		attempt, err = s.ResendTx(ctx, tx, tenantID, id)
		return err
	})
	if err != nil {
		return 0, err
	}
	return attempt, nil
}

// ResendTx is Resend in transaction tx, which must be scoped to tenantID.
// On an error the caller rolls tx back.
func (s *Service) ResendTx(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (attempt int, err error) {
	if s.river == nil {
		return 0, ErrNotConfigured
	}
	o, err := db.OutboxGet(ctx, tx, tenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("outbox: get: %w", err)
	}
	if !o.HandoffState.Over() {
		return 0, &InProgressError{State: o.HandoffState}
	}
	// The new job's run continues the trace of the request that resends.
	job, err := s.river.InsertTx(ctx, tx, jobs.DispatchArgs{TenantID: tenantID, OutboxID: id, AccountID: o.AccountID},
		jobs.TraceOpts(tracing.Traceparent(ctx)))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrEnqueue, err)
	}
	attempt, err = db.OutboxResend(ctx, tx, tenantID, id, job.Job.ID)
	if errors.Is(err, db.ErrNotFound) {
		return 0, &InProgressError{} // it changed meanwhile
	}
	if err != nil {
		return 0, fmt.Errorf("outbox: resend: %w", err)
	}
	return attempt, nil
}
