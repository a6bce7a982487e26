package workers

import (
	"cmp"
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/metrics"
)

type claimKind int

const (
	claimDone    claimKind = iota // handed off, dead or gone: nothing to do
	claimWait                     // try again after wait
	claimClaimed                  // the row is ours to send
)

// opReq is one request to the dispatcher's shared transactions: claim a
// row, or record the outcome of an attempt.
type opReq struct {
	tenantID uuid.UUID
	claim    uuid.UUID        // uuid.Nil for a finish
	fast     bool             // the claimed row needs no rate-limit token
	jobID    int64            // the claiming dispatch job
	also     []uuid.UUID      // the job's other rows (fast claims; a group's)
	extras   int              // more rows the job may take over (fast claims)
	finish   *db.OutboxFinish // nil for a claim
	// next, with a finish: in the same transaction, move the row's lane on
	// (db.LaneNextRequest).
	next *db.LaneNext
	// client is the River client running the job: it deletes the jobs of
	// rows the batch took over (deleteTakenJobs).
	client *river.Client[pgx.Tx]
}

// opRes answers an opReq: a claim's result (and extra rows now owned by
// the job), or whether a finish moved its row.
type opRes struct {
	claim  claimRes
	extras []*db.ClaimCandidate
	moved  bool
	// next is the finished row's lane's next message, when the finish
	// asked for it and there is one to send now.
	next *db.LaneNextResult
	err  error
}

type claimRes struct {
	kind    claimKind
	cand    *db.ClaimCandidate
	resumed bool
	wait    time.Duration
	// poll: the wait is on something in flight (an earlier message of the
	// lane, a concurrent claim) whose end is unknown.
	poll bool
	// park: snooze the job for wait. The row waits behind an earlier
	// message of a lane that needs no rate-limit token, whose hand-off
	// claims this row (and deletes the parked job).
	park bool
	lane string
}

// runOps runs a batch of claims and finishes: per tenant one transaction
// that first records the outcomes, then claims the rows that need no
// rate-limit token (one round trip); the other rows, and those that could
// not be claimed, go through claimLimited. A tenant's failure is its
// requests' (opRes.err), never the batch's.
func (d *Dispatcher) runOps(ctx context.Context, reqs []opReq) ([]groupcommit.Outcome[opRes], error) {
	out := make([]opRes, len(reqs))
	byTenant := map[uuid.UUID][]int{}
	var order []uuid.UUID
	for i, r := range reqs {
		if _, ok := byTenant[r.tenantID]; !ok {
			order = append(order, r.tenantID)
		}
		byTenant[r.tenantID] = append(byTenant[r.tenantID], i)
	}
	for _, t := range order {
		if err := d.opsTenant(ctx, t, reqs, byTenant[t], out); err != nil {
			for _, i := range byTenant[t] {
				out[i] = opRes{err: err}
			}
		}
	}
	outs := make([]groupcommit.Outcome[opRes], len(out))
	for i := range out {
		outs[i].Res = out[i]
	}
	return outs, nil
}

// opsTenant runs the requests reqs[idx] (all of tenantID) into out.
func (d *Dispatcher) opsTenant(ctx context.Context, tenantID uuid.UUID, reqs []opReq, idx []int, out []opRes) error {
	var finishes []db.OutboxFinish
	var finishIdx []int
	// Two jobs of one row in the same batch: only the first may claim it.
	first := map[uuid.UUID]int{}
	var ids, fastIDs []uuid.UUID
	fastSet := map[uuid.UUID]bool{}
	for _, i := range idx {
		r := reqs[i]
		if r.finish != nil {
			finishes = append(finishes, *r.finish)
			finishIdx = append(finishIdx, i)
			continue
		}
		if _, dup := first[r.claim]; !dup {
			first[r.claim] = i
			ids = append(ids, r.claim)
			if r.fast {
				fastIDs = append(fastIDs, r.claim)
				fastSet[r.claim] = true
			}
		}
	}
	// The other rows of group jobs are claimed with the fast claims and
	// returned as the jobs' extras. A row that is also a claim of this
	// batch is that claim's.
	alsoOf := map[uuid.UUID]int64{}
	for _, i := range idx {
		r := reqs[i]
		if r.finish != nil || !r.fast || r.jobID == 0 {
			continue
		}
		for _, id := range r.also {
			if _, own := first[id]; own {
				continue
			}
			if _, dup := alsoOf[id]; !dup {
				alsoOf[id] = r.jobID
				fastIDs = append(fastIDs, id)
			}
		}
	}
	// Extra rows for the jobs of fast claims, at most 4×MaxBatch in all.
	var extras *db.ExtrasRequest
	budget := 4 * d.cfg.MaxBatch
	now := time.Now()
	if !d.extrasWanted(tenantID, now) {
		budget = 0
	}
	for _, i := range idx {
		r := reqs[i]
		if r.finish == nil && r.fast && r.extras > 0 && r.jobID != 0 && first[r.claim] == i && budget > 0 {
			if extras == nil {
				extras = &db.ExtrasRequest{Unlimited: d.unlimited}
			}
			n := min(r.extras, budget)
			budget -= n
			extras.JobIDs = append(extras.JobIDs, r.jobID)
			extras.Counts = append(extras.Counts, int32(n))
		}
	}
	// Lanes to move on once their messages' outcomes are recorded.
	var lanes *db.LaneNextRequest
	var laneIdx []int
	for _, i := range finishIdx {
		if r := reqs[i]; r.next != nil {
			if lanes == nil {
				lanes = &db.LaneNextRequest{Unlimited: d.unlimited}
			}
			lanes.Lanes = append(lanes.Lanes, *r.next)
			laneIdx = append(laneIdx, i)
		}
	}
	finished, fast, extra, err := db.OutboxFinishAndClaimCommit(ctx, d.pool, tenantID, finishes, fastIDs, d.cfg.lease(), extras, lanes)
	if err != nil {
		return err
	}
	var taken []int64
	var client *river.Client[pgx.Tx]
	for _, i := range idx {
		client = cmp.Or(client, reqs[i].client)
	}
	for k := range extra {
		if extra[k].PriorJobID != 0 {
			taken = append(taken, extra[k].PriorJobID)
		}
	}
	if lanes != nil {
		for k := range lanes.Results {
			taken = append(taken, lanes.Results[k].PriorJobIDs...)
		}
	}
	d.deleteTakenJobs(ctx, client, taken)
	if extras != nil {
		d.extrasFound(tenantID, len(extra) > 0, now)
	}
	byJob := map[int64][]*db.ClaimCandidate{}
	var claimedOwn []db.ClaimCandidate
	for k := range fast {
		if job, ok := alsoOf[fast[k].ID]; ok {
			byJob[job] = append(byJob[job], &fast[k])
			delete(alsoOf, fast[k].ID)
		} else {
			claimedOwn = append(claimedOwn, fast[k])
		}
	}
	fast = claimedOwn
	if len(alsoOf) > 0 {
		d.giveMissedJobs(ctx, client, tenantID, slices.Collect(maps.Keys(alsoOf)), now)
	}
	for k := range extra {
		byJob[extra[k].JobID] = append(byJob[extra[k].JobID], &extra[k].Candidate)
	}
	moved := make(map[uuid.UUID]bool, len(finished))
	for _, f := range finished {
		moved[f.ID] = true
	}
	for _, i := range finishIdx {
		out[i] = opRes{moved: moved[reqs[i].finish.ID]}
	}
	if lanes != nil {
		for k := range lanes.Results {
			out[laneIdx[lanes.Results[k].Lane]].next = &lanes.Results[k]
		}
	}
	if len(ids) == 0 {
		return nil
	}
	res := make(map[int]claimRes, len(ids))
	claimed := make(map[uuid.UUID]bool, len(fast))
	for k := range fast {
		c := &fast[k]
		claimed[c.ID] = true
		res[first[c.ID]] = claimRes{kind: claimClaimed, cand: c, resumed: c.HandoffState == db.HandoffSending,
			lane: laneKey(tenantID, c.AccountID, c.ConversationID)}
	}
	if len(fast) < len(ids) {
		var rest []uuid.UUID
		for _, id := range ids {
			if !claimed[id] {
				rest = append(rest, id)
			}
		}
		if err := d.claimLimited(ctx, tenantID, rest, fastSet, first, res, now); err != nil {
			return err
		}
	}
	for _, i := range idx {
		r := reqs[i]
		if r.finish != nil {
			continue
		}
		if first[r.claim] == i {
			out[i] = opRes{claim: res[i], extras: byJob[r.jobID]}
		} else {
			// A duplicate of a row in this batch waits for its claimant
			// (and sends its group's rows, if it names any).
			out[i] = opRes{claim: claimRes{kind: claimWait, poll: true}, extras: byJob[r.jobID]}
		}
	}
	return nil
}

// deleteTakenJobs deletes, through River's client, the jobs of rows the
// batch's transaction took over for other jobs (extras, a lane's hand-on
// and the rows it adopted): River need not run them only to find their
// rows taken. River leaves a job it is running, and a job that names more
// rows (a group of sends, jobs.DispatchArgs.More) stays for the others;
// those run and find their rows taken, as duplicate jobs always may (the
// row, not the job, says what remains to do). It runs after the commit,
// one round trip for the batches that took rows over: in the commit's
// transaction it would turn the one-round-trip implicit transaction
// (db.OutboxFinishAndClaimCommit) into BEGIN … COMMIT for every batch. A
// job River fetches in between runs as a no-op; a failure is logged and
// leaves the jobs to do the same.
func (d *Dispatcher) deleteTakenJobs(ctx context.Context, client *river.Client[pgx.Tx], ids []int64) {
	if client == nil || len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	params := river.NewJobDeleteManyParams().IDs(ids...).First(min(len(ids), 10_000)).Where("NOT (args ? 'more')")
	if _, err := client.JobDeleteMany(ctx, params); err != nil {
		d.cfg.Logger.Warn("dispatch: delete the jobs of rows taken over (they will run and find their rows taken)",
			"jobs", len(ids), "err", err)
	}
}

// giveMissedJobs gives a job of its own to each row of a group job that the
// group's claim missed although nothing else
// will send it: queued and due, or sending with an expired lease, and
// first of its lane. The claim locks rows by the version it saw, so a
// row updated in between (a streamed reply's append) is missed; rows
// behind an earlier message of their lane are handed on by that lane,
// and rows another job took are sending. A failure is logged: the
// outbox sweeper gives such rows a job later.
func (d *Dispatcher) giveMissedJobs(ctx context.Context, client *river.Client[pgx.Tx], tenantID uuid.UUID,
	ids []uuid.UUID, now time.Time) {
	if client == nil {
		return
	}
	var items []rescheduled
	err := db.InDispatchTx(ctx, d.pool, tenantID, func(tx pgx.Tx) error {
		probes, err := db.OutboxProbe(ctx, tx, tenantID, ids)
		if err != nil {
			return err
		}
		for _, p := range probes {
			if r := probeWait(tenantID, p, now); r.kind == claimWait && r.wait <= 0 && p.BlockerState == "" {
				items = append(items, rescheduled{id: p.ID, accountID: p.AccountID})
			}
		}
		if len(items) == 0 {
			return nil
		}
		return enqueueDispatch(ctx, client, tx, tenantID, items)
	})
	if err != nil {
		d.cfg.Logger.Warn("dispatch: jobs for the rows of a group its claim missed (the sweeper will give them jobs)",
			"rows", len(ids), "err", err)
	}
}

// claimLimited claims rows that need rate-limit tokens, and those of
// fast (no token needed) that the fast claim missed, and says how long
// the rows that cannot be claimed should wait.
func (d *Dispatcher) claimLimited(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, fast map[uuid.UUID]bool,
	first map[uuid.UUID]int, res map[int]claimRes, now time.Time) error {
	tx, err := db.BeginDispatch(ctx, d.pool, tenantID)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck

	cands, err := db.OutboxClaimCandidates(ctx, tx, tenantID, ids)
	if err != nil {
		return err
	}
	granted, denied, err := d.takeTokens(ctx, tx, tenantID, cands)
	if err != nil {
		return err
	}
	marks := make([]db.MarkSending, len(granted))
	for i, c := range granted {
		marks[i] = db.MarkSending{ID: c.ID, Resumed: c.HandoffState == db.HandoffSending}
	}
	var moved []uuid.UUID
	if len(marks) > 0 {
		if moved, err = db.OutboxMarkSending(ctx, tx, tenantID, d.cfg.lease(), marks); err != nil {
			return err
		}
	}
	// A resumed row denied its token waits its turn still sending: its
	// lease is held until then, or it would read as abandoned (and the
	// outbox sweeper would send it another job) for the whole wait.
	var holdIDs []uuid.UUID
	var holdWaits []time.Duration
	for _, dn := range denied {
		if dn.cand.HandoffState == db.HandoffSending {
			holdIDs = append(holdIDs, dn.cand.ID)
			holdWaits = append(holdWaits, dn.wait)
		}
	}
	if len(holdIDs) > 0 {
		if err := db.OutboxHoldLease(ctx, tx, tenantID, holdIDs, holdWaits); err != nil {
			return err
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
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
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
		r := probeWait(tenantID, p, now)
		if fast[p.ID] && r.kind == claimWait && p.BlockerState != "" {
			// Behind an earlier message of a lane that hands on: park.
			r = claimRes{kind: claimWait, park: true, wait: max(r.wait, d.cfg.LaneWait)}
		}
		res[first[p.ID]] = r
	}
	for _, id := range rest {
		if !probed[id] {
			res[first[id]] = claimRes{kind: claimDone} // no such row (deleted or another tenant's)
		}
	}
	return nil
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
	if p.BlockerState != "" {
		// An earlier message of the lane is waiting for its next attempt
		// (or out a platform's Retry-After): come back then; or it is in
		// flight: poll (its finish in this process wakes us).
		if until := p.BlockerNextAttemptAt.Sub(now); until > 0 {
			return claimRes{kind: claimWait, wait: until, poll: true, lane: lane}
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
		specs[i] = bucketsFor(d.limits[c.ChannelType], c.RateLimitPerSec, c.RateLimitBurst)
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

// extrasQuietFor is how long claims of a tenant ask for no extras after a
// request found none. The walk for extras (mio.dispatch_claim_extras)
// costs the same whether it finds rows or not — up to 4 rows looked at
// per row asked for, each checked against its lane — and it runs inside
// the shared transactions that every hand-on waits for. When the due
// backlog is lane-blocked (a few conversations with many queued messages)
// it finds nothing call after call: in `mio-bench dispatch --lanes 64`,
// 159 walks of 20 ms, 3.2 s of a 5.2 s run. Extras only save River
// fetches; a row not taken here is taken by its own job.
const extrasQuietFor = 250 * time.Millisecond

// extrasWanted says whether the claims of tenantID ask for extras now.
func (d *Dispatcher) extrasWanted(tenantID uuid.UUID, now time.Time) bool {
	d.extrasMu.Lock()
	defer d.extrasMu.Unlock()
	until, ok := d.extrasQuiet[tenantID]
	return !ok || now.After(until)
}

// extrasFound records whether a request for extras of tenantID found any.
func (d *Dispatcher) extrasFound(tenantID uuid.UUID, found bool, now time.Time) {
	d.extrasMu.Lock()
	defer d.extrasMu.Unlock()
	if found {
		delete(d.extrasQuiet, tenantID)
	} else {
		d.extrasQuiet[tenantID] = now.Add(extrasQuietFor)
	}
}
