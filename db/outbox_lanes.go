package db

import (
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// LaneNext asks for the next message of a lane whose message the running
// dispatch job JobID is recording the outcome of.
type LaneNext struct {
	JobID          int64
	AccountID      uuid.UUID
	ConversationID string
	// Claim: take the lane's next row for the job. False (the job is out
	// of its budget) only names it, for a job of its own.
	Claim bool
	// Adopt, with Claim: the job starts draining the lane. It also
	// becomes the job of the queued rows behind (up to 1,000), whose own
	// jobs are returned in LaneNextResult.PriorJobIDs: River need not run
	// a job per message only to find its lane busy.
	Adopt bool
}

// LaneNextRequest moves lanes on in OutboxFinishAndClaimCommit, after the
// outcomes of their messages are recorded (mio.dispatch_claim_next): a
// lane's first active row, when it is queued and due and needs no
// rate-limit token (a channel of Unlimited, an account without limits),
// is claimed for the asking job under the lease (the job it leaves is
// returned in LaneNextResult.PriorJobIDs);
// a row that is due but cannot be claimed this way is named. Lanes whose
// first row is in flight (the finished row itself, rate-limited), locked
// or waiting for a retry (the finished row itself, retried) are absent
// from Results: whoever holds that row moves the lane on.
type LaneNextRequest struct {
	Lanes     []LaneNext
	Unlimited []string
	// Results is filled by the commit.
	Results []LaneNextResult
}

// LaneNextResult is a lane's next row: claimed for the asking job (a
// full candidate, now sending), or only named (Claimed false: ID and
// AccountID set) because it must get a job of its own to run now.
type LaneNextResult struct {
	// Lane indexes LaneNextRequest.Lanes.
	Lane      int
	Claimed   bool
	Candidate ClaimCandidate
	// PriorJobIDs, on a claimed row, are the jobs it and the rows its
	// job adopted had: River need not run them, and the caller deletes
	// them through River's client.
	PriorJobIDs []int64
}

// queueLaneNext adds the lane statement of r to a dispatch transaction.
func queueLaneNext(b *pgx.Batch, tenantID uuid.UUID, lease time.Duration, r *LaneNextRequest) {
	jobIDs := make([]int64, len(r.Lanes))
	accountIDs := make([]uuid.UUID, len(r.Lanes))
	conversations := make([]string, len(r.Lanes))
	claims := make([]bool, len(r.Lanes))
	adopts := make([]bool, len(r.Lanes))
	for i, l := range r.Lanes {
		jobIDs[i], accountIDs[i], conversations[i], claims[i], adopts[i] = l.JobID, l.AccountID, l.ConversationID, l.Claim, l.Adopt
	}
	b.Queue(`SELECT lane, claimed, id, account_id, coalesce(channel_type, ''), conversation_id,
		coalesce(thread_id, ''), coalesce(text, ''), rich_content, attachments, edit_of,
		coalesce(attempt_no, 0), coalesce(series_first_attempt, 0), coalesce(attempts, 0),
		coalesce(created_at, now()), coalesce(provider_state, ''), coalesce(edit_provider_message_id, ''),
		coalesce(prior_job_ids, '{}')
		FROM mio.dispatch_claim_next($1, $2, $3, $4, $5, $6, $7, $8)`,
		tenantID, jobIDs, accountIDs, conversations, claims, adopts, r.Unlimited, lease.Seconds()).Query(func(rows pgx.Rows) error {
		r.Results = r.Results[:0]
		for rows.Next() {
			var n LaneNextResult
			c := &n.Candidate
			var state string
			if err := rows.Scan(&n.Lane, &n.Claimed, &c.ID, &c.AccountID, &c.ChannelType, &c.ConversationID,
				&c.ThreadID, &c.Text, &c.RichContent, &c.Attachments, &c.EditOf, &c.AttemptNo,
				&c.SeriesFirstAttempt, &c.Attempts, &c.CreatedAt, &state, &c.EditProviderMessageID, &n.PriorJobIDs); err != nil {
				return err
			}
			n.Lane-- // SQL arrays count from 1
			c.ProviderState, c.HandoffState = ProviderState(state), HandoffQueued
			r.Results = append(r.Results, n)
		}
		return rows.Err()
	})
}
