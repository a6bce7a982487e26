package workers

import (
	"context"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
)

type claimKind int

const (
	claimDone    claimKind = iota // handed off, dead or gone: nothing to do
	claimWait                     // try again after wait
	claimClaimed                  // the row is ours to send
)

type claimReq struct {
	tenantID uuid.UUID
	id       uuid.UUID
}

type claimRes struct {
	kind    claimKind
	cand    *db.ClaimCandidate
	resumed bool
	wait    time.Duration
	// poll: the wait is on something in flight (an earlier message of the
	// lane, a concurrent claim) whose end is unknown.
	poll bool
	lane string
	err  error
}

// runClaims claims a batch of rows, one transaction per tenant.
func (d *Dispatcher) runClaims(ctx context.Context, reqs []claimReq) ([]claimRes, error) {
	out := make([]claimRes, len(reqs))
	byTenant := map[uuid.UUID][]int{}
	var order []uuid.UUID
	for i, r := range reqs {
		if _, ok := byTenant[r.tenantID]; !ok {
			order = append(order, r.tenantID)
		}
		byTenant[r.tenantID] = append(byTenant[r.tenantID], i)
	}
	for _, t := range order {
		idx := byTenant[t]
		res, err := d.claimTenant(ctx, t, reqs, idx)
		for _, i := range idx {
			if err != nil {
				out[i] = claimRes{err: err}
			} else {
				out[i] = res[i]
			}
		}
	}
	return out, nil
}

// claimTenant claims the rows of reqs[idx] (all of tenantID) in one
// transaction: lock the sendable ones, take rate-limit tokens, move the
// granted ones to sending; and say how long the others should wait.
func (d *Dispatcher) claimTenant(ctx context.Context, tenantID uuid.UUID, reqs []claimReq, idx []int) (map[int]claimRes, error) {
	// Two jobs of one row in the same batch: only the first may claim it.
	first := map[uuid.UUID]int{}
	ids := make([]uuid.UUID, 0, len(idx))
	for _, i := range idx {
		if _, dup := first[reqs[i].id]; !dup {
			first[reqs[i].id] = i
			ids = append(ids, reqs[i].id)
		}
	}
	res := make(map[int]claimRes, len(idx))
	now := time.Now()
	tx, err := db.BeginTenant(ctx, d.pool, tenantID)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck

	cands, err := db.OutboxClaimCandidates(ctx, tx, tenantID, ids)
	if err != nil {
		return nil, err
	}
	granted, denied, err := d.takeTokens(ctx, tx, tenantID, cands)
	if err != nil {
		return nil, err
	}
	marks := make([]db.MarkSending, len(granted))
	for i, c := range granted {
		marks[i] = db.MarkSending{ID: c.ID, Resumed: c.HandoffState == db.HandoffSending}
	}
	var moved []uuid.UUID
	if len(marks) > 0 {
		if moved, err = db.OutboxMarkSending(ctx, tx, tenantID, d.cfg.lease(), marks); err != nil {
			return nil, err
		}
	}
	seen := make(map[uuid.UUID]bool, len(cands))
	for _, c := range cands {
		seen[c.ID] = true
	}
	var rest []uuid.UUID
	for _, id := range ids {
		if !seen[id] {
			rest = append(rest, id)
		}
	}
	var probes []db.OutboxProbeResult
	if len(rest) > 0 {
		if probes, err = db.OutboxProbe(ctx, tx, tenantID, rest); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}

	isMoved := make(map[uuid.UUID]bool, len(moved))
	for _, id := range moved {
		isMoved[id] = true
	}
	for k := range granted {
		c := &granted[k]
		lane := laneKey(tenantID, c.AccountID, c.ConversationID)
		if isMoved[c.ID] {
			res[first[c.ID]] = claimRes{kind: claimClaimed, cand: c, resumed: c.HandoffState == db.HandoffSending, lane: lane}
		} else {
			res[first[c.ID]] = claimRes{kind: claimWait, poll: true, lane: lane}
		}
	}
	for _, dn := range denied {
		d.cfg.Metrics.RateLimitWaits.WithLabelValues(dn.cand.ChannelType, metrics.RateLimitBucket).Observe(dn.wait.Seconds())
		res[first[dn.cand.ID]] = claimRes{kind: claimWait, wait: dn.wait,
			lane: laneKey(tenantID, dn.cand.AccountID, dn.cand.ConversationID)}
	}
	probed := make(map[uuid.UUID]bool, len(probes))
	for _, p := range probes {
		probed[p.ID] = true
		res[first[p.ID]] = probeWait(tenantID, p, now)
	}
	for _, id := range rest {
		if !probed[id] {
			res[first[id]] = claimRes{kind: claimDone} // no such row (deleted or another tenant's)
		}
	}
	// Duplicates of a row in this batch wait for its claimant.
	for _, i := range idx {
		if first[reqs[i].id] != i {
			res[i] = claimRes{kind: claimWait, poll: true}
		}
	}
	return res, nil
}

// probeWait turns the state of a row that could not be claimed into a
// result: done, or a wait.
func probeWait(tenantID uuid.UUID, p db.OutboxProbeResult, now time.Time) claimRes {
	lane := laneKey(tenantID, p.AccountID, p.ConversationID)
	switch p.HandoffState {
	case db.HandoffHandedOff, db.HandoffDead:
		return claimRes{kind: claimDone}
	case db.HandoffQueued:
		if until := p.NextAttemptAt.Sub(now); until > 0 {
			return claimRes{kind: claimWait, wait: until, lane: lane}
		}
	case db.HandoffSending:
		if p.LeaseUntil != nil {
			if until := p.LeaseUntil.Sub(now); until > 0 {
				// Another worker holds the attempt (or it waits out a
				// platform's Retry-After): come back when its lease ends.
				return claimRes{kind: claimWait, wait: until + 10*time.Millisecond, lane: lane}
			}
		}
	}
	switch p.BlockerState {
	case db.HandoffQueued:
		// An earlier message of the lane waits for its next attempt.
		return claimRes{kind: claimWait, wait: max(p.BlockerNextAttemptAt.Sub(now), 0), poll: true, lane: lane}
	case db.HandoffSending:
		if p.BlockerLeaseUntil != nil {
			if until := p.BlockerLeaseUntil.Sub(now); until > 2*time.Second {
				// It waits out a long Retry-After (or its worker died).
				return claimRes{kind: claimWait, wait: until, lane: lane}
			}
		}
	}
	// In flight: an earlier message of the lane being sent, or this row
	// locked by a concurrent claim.
	return claimRes{kind: claimWait, poll: true, lane: lane}
}

type deniedCand struct {
	cand *db.ClaimCandidate
	wait time.Duration
}

// takeTokens takes a token from every bucket of each candidate
// (per-conversation buckets first, then per-account ones) and splits the
// candidates into granted and denied (with the wait until their turn).
// Candidates of accounts without limits pass untouched.
func (d *Dispatcher) takeTokens(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, cands []db.ClaimCandidate) ([]db.ClaimCandidate, []deniedCand, error) {
	specs := make([][]bucketSpec, len(cands))
	limited := false
	for i := range cands {
		c := &cands[i]
		specs[i] = bucketsFor(c.ChannelType, c.RateLimitPerSec, c.RateLimitBurst)
		limited = limited || len(specs[i]) > 0
	}
	if !limited {
		return cands, nil, nil
	}
	ok := make([]bool, len(cands))
	for i := range ok {
		ok[i] = true
	}
	waits := make([]time.Duration, len(cands))
	for _, scope := range []string{scopeConversation, scopeAccount} {
		type group struct {
			spec    bucketSpec
			members []int // candidate indexes, in seq order
		}
		groups := map[string]*group{}
		for i := range cands {
			if !ok[i] {
				continue
			}
			for _, s := range specs[i] {
				if s.Scope != scope {
					continue
				}
				key := bucketKey(scope, cands[i].AccountID, cands[i].ConversationID)
				g := groups[key]
				if g == nil {
					g = &group{spec: s}
					groups[key] = g
				}
				g.members = append(g.members, i)
			}
		}
		if len(groups) == 0 {
			continue
		}
		// A fixed order of bucket rows keeps concurrent claims from
		// deadlocking on them.
		keys := make([]string, 0, len(groups))
		for k := range groups {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		wants := make([]db.RateWant, len(keys))
		for i, k := range keys {
			g := groups[k]
			wants[i] = db.RateWant{Key: k, Rate: g.spec.Rate, Burst: g.spec.Burst, N: len(g.members)}
		}
		grants, err := db.RateTake(ctx, tx, tenantID, wants, nil)
		if err != nil {
			return nil, nil, err
		}
		for i, k := range keys {
			g, gr := groups[k], grants[i]
			for pos, ci := range g.members {
				if pos < gr.Granted {
					continue
				}
				// Spread the denied over the coming tokens, with jitter so
				// that waiters do not all come back at once.
				wait := gr.Wait + time.Duration(float64(pos-gr.Granted)/g.spec.Rate*float64(time.Second))
				wait += time.Duration(rand.Int64N(int64(wait/10) + 1))
				ok[ci] = false
				waits[ci] = max(waits[ci], wait)
			}
		}
	}
	var granted []db.ClaimCandidate
	var denied []deniedCand
	for i := range cands {
		if ok[i] {
			granted = append(granted, cands[i])
		} else {
			denied = append(denied, deniedCand{cand: &cands[i], wait: waits[i]})
		}
	}
	return granted, denied, nil
}
