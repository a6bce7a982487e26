package db

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LaneNext asks for the next message of a lane whose message the running
// dispatch job JobID has just handed off or dead-lettered.
type LaneNext struct {
	JobID          int64
	AccountID      uuid.UUID
	ConversationID string
	// Claim: take the lane's next row for the job. False (the job is out
	// of its budget) only reports it, for a job of its own.
	Claim bool
}

// LaneNextResult is a lane's next row: claimed for the asking job (a
// full candidate, now sending), or only named (Claimed false: ID and
// AccountID set) because it must get a job of its own to run now.
type LaneNextResult struct {
	// Lane indexes the request it answers.
	Lane      int
	Claimed   bool
	Candidate ClaimCandidate
}

// OutboxLaneNextCommit, in one transaction and one round trip, moves each
// lane on (mio.dispatch_claim_next): a lane's first active row, when it is
// queued and due and needs no rate-limit token (a channel of unlimited,
// an account without limits), is claimed for the asking job under a lease
// and its own job deleted; a row that cannot be claimed this way is
// named. Lanes whose first row is in flight, locked or waiting for a
// retry are absent: whoever holds that row moves the lane on. Call it
// after the hand-offs committed.
func OutboxLaneNextCommit(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, lanes []LaneNext,
	unlimited []string, lease time.Duration) ([]LaneNextResult, error) {
	if len(lanes) == 0 {
		return nil, nil
	}
	jobIDs := make([]int64, len(lanes))
	accountIDs := make([]uuid.UUID, len(lanes))
	conversations := make([]string, len(lanes))
	claims := make([]bool, len(lanes))
	for i, l := range lanes {
		jobIDs[i], accountIDs[i], conversations[i], claims[i] = l.JobID, l.AccountID, l.ConversationID, l.Claim
	}
	var out []LaneNextResult
	err := pipelineTx(ctx, pool, tenantID, func(b *pgx.Batch) {
		b.Queue(`SELECT lane, claimed, id, account_id, coalesce(channel_type, ''), conversation_id,
			coalesce(thread_id, ''), coalesce(text, ''), rich_content, attachments, edit_of,
			coalesce(attempt_no, 0), coalesce(series_first_attempt, 0), coalesce(attempts, 0),
			coalesce(created_at, now()), coalesce(provider_state, ''), coalesce(edit_provider_message_id, '')
			FROM mio.dispatch_claim_next($1, $2, $3, $4, $5, $6, $7)`,
			tenantID, jobIDs, accountIDs, conversations, claims, unlimited, lease.Seconds()).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r LaneNextResult
				c := &r.Candidate
				var state string
				if err := rows.Scan(&r.Lane, &r.Claimed, &c.ID, &c.AccountID, &c.ChannelType, &c.ConversationID,
					&c.ThreadID, &c.Text, &c.RichContent, &c.Attachments, &c.EditOf, &c.AttemptNo,
					&c.SeriesFirstAttempt, &c.Attempts, &c.CreatedAt, &state, &c.EditProviderMessageID); err != nil {
					return err
				}
				r.Lane-- // SQL arrays count from 1
				c.ProviderState, c.HandoffState = ProviderState(state), HandoffQueued
				out = append(out, r)
			}
			return rows.Err()
		})
	})
	if err != nil {
		return nil, fmt.Errorf("lane next: %w", err)
	}
	return out, nil
}
