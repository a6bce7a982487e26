package workers

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/db"
)

// laneRun is what a dispatch job's run lends its lanes: the job that owns
// the rows it claims, and since when it runs.
type laneRun struct {
	jobID int64
	start time.Time
	// chain: the job's rows need no rate-limit token, so each hand-off
	// claims the lane's next message for the job (mio.dispatch_claim_next).
	chain bool
	// client is the River client running the job (nil outside one).
	client *river.Client[pgx.Tx]
}

// sendLane makes one attempt for a claimed row and records its outcome.
// When run chains, the transaction that records a hand-off (or a dead
// letter) also claims the lane's next message for the same job, and
// sendLane sends that one too, and so on while the job's LaneBudget
// lasts: the next message of a lane is claimable the moment its
// predecessor is handed off, and is sent without waiting for a job of its
// own to be fetched. Out of budget, the lane's next message is returned in
// later, to get a job that runs now. A lane row that must be tried again
// soon (a retry or Retry-After within InlineWait and the budget) is waited
// for and claimed again here, as the job's own row is in dispatch. It
// returns the first row's outcome (err: nothing recorded for it, see
// attempt) and the lane rows that need a job of their own (a retry after
// its delay, or the hand-over).
func (d *Dispatcher) sendLane(ctx context.Context, tenantID uuid.UUID, run laneRun, r claimRes) (db.OutboxFinish, []rescheduled, error) {
	var first db.OutboxFinish
	var later []rescheduled
	for n := 0; ; n++ {
		fin, err := d.attempt(ctx, tenantID, r)
		var res opRes
		if err == nil {
			req := opReq{tenantID: tenantID, finish: &fin, client: run.client}
			if run.chain {
				req.next = &db.LaneNext{JobID: run.jobID, AccountID: r.cand.AccountID, ConversationID: r.cand.ConversationID,
					Claim: time.Since(run.start) < d.cfg.LaneBudget}
				req.next.Adopt = req.next.Claim && n == 0
			}
			res, err = d.ops.Do(ctx, req)
			if err == nil {
				err = res.err
			}
		}
		if n == 0 {
			first = fin
		}
		if err != nil {
			// Nothing recorded (the database went away mid-send): the
			// row stays leased and is resumed after its lease, with the
			// same attempt and key. The job's first row comes back with
			// the job's retry; a handed-on row is given a job of its own,
			// due when its lease ends (sendAll), instead of waiting for
			// the sweeper's grace and interval.
			if n > 0 {
				later = append(later, rescheduled{id: r.cand.ID, accountID: r.cand.AccountID, delay: d.cfg.lease()})
				err = nil
			}
			return first, later, err
		}
		switch fin.Outcome {
		case db.OutcomeHandedOff, db.OutcomeDead:
			d.lanes.notify(r.lane)
		default:
			if n == 0 {
				// The job's own row loops in dispatch; an extra row gets a
				// job of its own (sendAll).
				return first, later, nil
			}
			if again, ok := d.retryInline(ctx, tenantID, run, r, fin.Delay); ok {
				r = again
				continue
			}
			later = append(later, rescheduled{id: fin.ID, accountID: r.cand.AccountID, delay: fin.Delay})
			return first, later, nil
		}
		next := res.next
		if next == nil {
			return first, later, nil
		}
		if !next.Claimed {
			later = append(later, rescheduled{id: next.Candidate.ID, accountID: next.Candidate.AccountID})
			return first, later, nil
		}
		r = claimRes{kind: claimClaimed, cand: &next.Candidate, lane: r.lane}
	}
}

// retryInline waits out a short delay before a lane row's next attempt
// and claims the row again for the job; false when the wait is too long
// for the run, or the row could not be claimed (it then needs a job).
func (d *Dispatcher) retryInline(ctx context.Context, tenantID uuid.UUID, run laneRun, r claimRes, delay time.Duration) (claimRes, bool) {
	delay = max(delay, time.Millisecond)
	if delay > d.cfg.InlineWait || time.Since(run.start)+delay > d.cfg.LaneBudget {
		return r, false
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return r, false
	case <-t.C:
	}
	op, err := d.ops.Do(ctx, opReq{tenantID: tenantID, claim: r.cand.ID, fast: true, jobID: run.jobID, client: run.client})
	if err != nil || op.err != nil || op.claim.kind != claimClaimed {
		return r, false
	}
	again := op.claim
	again.lane = r.lane
	return again, true
}
