package db

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The dispatcher's hot statements as whole transactions in ONE network
// round trip each: BEGIN, the tenant, the statements, COMMIT, pipelined.
// Any failure rolls the whole transaction back. Statements are planned
// for their actual parameters, without JIT (see BeginDispatch); the
// claim and the finish are functions whose plans do not depend on them
// (mio.dispatch_claim, mio.dispatch_finish).

// OutboxFinishAndClaimCommit, in one transaction and one round trip,
// records attempts' outcomes (mio.dispatch_finish), then claims, among
// claimIDs, the rows that can be sent now (mio.dispatch_claim: the caller
// has checked they need no rate-limit token), then, when extras is set,
// more rows for the requesting jobs (mio.dispatch_claim_extras), all
// moved to sending under a lease, then, when lanes is set, moves on the
// lanes of the finished rows (see OutboxLaneNext; results in
// lanes.Results). Finishing first lets a message claim its lane the
// moment the message before it is handed off. Every part may be empty;
// when all are, nothing is sent (a batch of rate-limited claims only).
// Claimed candidates carry no account fields; HandoffState is the state
// before the claim (sending: a resumed attempt).
func OutboxFinishAndClaimCommit(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, finishes []OutboxFinish,
	claimIDs []uuid.UUID, lease time.Duration, extras *ExtrasRequest, lanes *LaneNextRequest) ([]OutboxFinishResult, []ClaimCandidate, []ExtraClaim, error) {
	if len(finishes) == 0 && len(claimIDs) == 0 && (extras == nil || len(extras.JobIDs) == 0) &&
		(lanes == nil || len(lanes.Lanes) == 0) {
		return nil, nil, nil, nil
	}
	var finished []OutboxFinishResult
	claimed := make([]ClaimCandidate, 0, len(claimIDs))
	var extra []ExtraClaim
	err := pipelineTx(ctx, pool, tenantID, func(b *pgx.Batch) {
		if len(finishes) > 0 {
			b.Queue(sqlDispatchFinish, finishArgs(tenantID, finishes)...).Query(func(rows pgx.Rows) error {
				var err error
				finished, err = pgx.CollectRows(rows, scanFinishResult)
				return err
			})
		}
		if len(claimIDs) > 0 {
			b.Queue(sqlDispatchClaim, tenantID, claimIDs, lease.Seconds()).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var c ClaimCandidate
					if err := rows.Scan(&c.ID, &c.AccountID, &c.ChannelType, &c.ConversationID, &c.ThreadID, &c.Text,
						&c.RichContent, &c.Attachments, &c.EditOf, &c.HandoffState, &c.AttemptNo, &c.SeriesFirstAttempt,
						&c.Attempts, &c.CreatedAt, &c.ProviderState, &c.EditProviderMessageID); err != nil {
						return err
					}
					claimed = append(claimed, c)
				}
				return rows.Err()
			})
		}
		if extras != nil && len(extras.JobIDs) > 0 {
			b.Queue(`SELECT id, job_id, account_id, channel_type, conversation_id, thread_id, text, rich_content,
				attachments, edit_of, attempt_no, series_first_attempt, created_at, provider_state, edit_provider_message_id,
				coalesce(prior_job_id, 0)
				FROM mio.dispatch_claim_extras($1, $2, $3, $4, $5)`,
				tenantID, extras.JobIDs, extras.Counts, extras.Unlimited, lease.Seconds()).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var e ExtraClaim
					c := &e.Candidate
					if err := rows.Scan(&c.ID, &e.JobID, &c.AccountID, &c.ChannelType, &c.ConversationID, &c.ThreadID,
						&c.Text, &c.RichContent, &c.Attachments, &c.EditOf, &c.AttemptNo, &c.SeriesFirstAttempt,
						&c.CreatedAt, &c.ProviderState, &c.EditProviderMessageID, &e.PriorJobID); err != nil {
						return err
					}
					c.HandoffState = HandoffQueued
					extra = append(extra, e)
				}
				return rows.Err()
			})
		}
		if lanes != nil && len(lanes.Lanes) > 0 {
			queueLaneNext(b, tenantID, lease, lanes)
		}
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("finish and claim: %w", err)
	}
	return finished, claimed, extra, nil
}

// ExtrasRequest asks running dispatch jobs to take over more rows (see
// mio.dispatch_claim_extras): Counts[i] rows for job JobIDs[i], of
// channels Unlimited.
type ExtrasRequest struct {
	JobIDs    []int64
	Counts    []int32
	Unlimited []string
}

// ExtraClaim is a row claimed for the running dispatch job JobID.
type ExtraClaim struct {
	JobID     int64
	Candidate ClaimCandidate
	// PriorJobID is the job the row had (0 for none): River need not run
	// it, and the caller deletes it through River's client.
	PriorJobID int64
}

// pipelineTx sends the tenant settings and the statements queue adds as
// one batch: PostgreSQL runs them up to the batch's single Sync as one
// implicit transaction (no BEGIN or COMMIT statements needed; see
// IngestCommit).
func pipelineTx(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, queue func(b *pgx.Batch)) error {
	return pipelineWith(ctx, pool, "SELECT set_config('app.current_tenant_id', $1, true), "+
		"set_config('plan_cache_mode', 'force_custom_plan', true), set_config('jit', 'off', true)", tenantID, queue)
}

// tenantPipeline is pipelineTx with the tenant setting only: statements
// keep the session's planner settings (cached generic plans).
func tenantPipeline(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, queue func(b *pgx.Batch)) error {
	return pipelineWith(ctx, pool, "SELECT set_config('app.current_tenant_id', $1, true)", tenantID, queue)
}

// pipelineWith sends settings (taking the tenant id as $1) and the
// statements queue adds as one batch.
func pipelineWith(ctx context.Context, pool *pgxpool.Pool, settings string, tenantID uuid.UUID, queue func(b *pgx.Batch)) error {
	if tenantID == uuid.Nil {
		return ErrNoTenant
	}
	b := &pgx.Batch{}
	b.Queue(settings, tenantID.String())
	queue(b)
	return sendPipeline(ctx, pool, b)
}

// sendPipeline sends b on a connection of pool as one implicit
// transaction (its statements up to the batch's single Sync).
func sendPipeline(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		// PostgreSQL rolls a failed implicit transaction back at the
		// Sync. A batch that failed before its Sync went out (an argument
		// that would not encode) may have left one open: abandon rolls it
		// back or closes the connection (after a Sync, its ROLLBACK only
		// draws a warning).
		abandon(conn)
		return translate(err)
	}
	return nil
}
