package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// ClaimCandidate is an outbox row locked for sending, with what the
// dispatcher needs of its account and of the message it edits.
type ClaimCandidate struct {
	ID                 uuid.UUID
	AccountID          uuid.UUID
	ChannelType        string
	ConversationID     string
	ThreadID           string
	Text               string
	RichContent        json.RawMessage
	Attachments        json.RawMessage
	EditOf             *uuid.UUID
	HandoffState       HandoffState
	AttemptNo          int
	SeriesFirstAttempt int
	Attempts           int
	CreatedAt          time.Time
	ProviderState      ProviderState
	AccountStatus      string
	RateLimitPerSec    *float64
	RateLimitBurst     *int32
	MaxAttempts        *int32
	// EditProviderMessageID is the provider id of the message EditOf names
	// ("" when it has none: not handed off, or the platform gave none).
	EditProviderMessageID string
}

// OutboxClaimCandidates locks, among ids, the rows that can be sent now:
// queued and due, or sending with an expired lease, and first of their
// (account, conversation) lane; rows locked by another transaction are
// skipped. Call it in a tenant transaction, then OutboxMarkSending.
func OutboxClaimCandidates(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID) ([]ClaimCandidate, error) {
	rows, err := tx.Query(ctx, sqlDispatchCandidates, tenantID, ids)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ClaimCandidate, error) {
		var c ClaimCandidate
		var edit *string
		err := row.Scan(&c.ID, &c.AccountID, &c.ChannelType, &c.ConversationID, &c.ThreadID, &c.Text,
			&c.RichContent, &c.Attachments, &c.EditOf, &c.HandoffState, &c.AttemptNo, &c.SeriesFirstAttempt,
			&c.Attempts, &c.CreatedAt, &c.ProviderState, &c.AccountStatus, &c.RateLimitPerSec, &c.RateLimitBurst,
			&c.MaxAttempts, &edit)
		c.EditProviderMessageID = deref(edit)
		return c, err
	})
	return out, translate(err)
}

// OutboxProbeResult says why a row was not claimable.
type OutboxProbeResult struct {
	ID             uuid.UUID
	AccountID      uuid.UUID
	ConversationID string
	HandoffState   HandoffState
	NextAttemptAt  time.Time
	LeaseUntil     *time.Time
	// BlockerState is the handoff state of the first active row ahead in
	// the lane, "" when none.
	BlockerState         HandoffState
	BlockerNextAttemptAt time.Time
	BlockerLeaseUntil    *time.Time
}

// OutboxProbe reports the state of rows (and of what blocks their lane).
// Rows that do not exist are absent from the result.
func OutboxProbe(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID) ([]OutboxProbeResult, error) {
	rows, err := tx.Query(ctx, sqlDispatchProbe, tenantID, ids)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxProbeResult, error) {
		var r OutboxProbeResult
		err := row.Scan(&r.ID, &r.AccountID, &r.ConversationID, &r.HandoffState, &r.NextAttemptAt, &r.LeaseUntil,
			&r.BlockerState, &r.BlockerNextAttemptAt, &r.BlockerLeaseUntil)
		return r, err
	})
	return out, translate(err)
}

// MarkSending is one claimed row to move to sending.
type MarkSending struct {
	ID uuid.UUID
	// Resumed: the row was already sending (expired lease): the same
	// attempt continues and is not counted again.
	Resumed bool
}

// OutboxMarkSending moves claimed rows to sending under a lease of
// lease, appending their events, and returns the ids moved.
func OutboxMarkSending(ctx context.Context, tx DBTX, tenantID uuid.UUID, lease time.Duration, rows []MarkSending) ([]uuid.UUID, error) {
	ids, events, counts := make([]uuid.UUID, len(rows)), make([]string, len(rows)), make([]int32, len(rows))
	for i, r := range rows {
		ids[i], events[i], counts[i] = r.ID, "sending", 1
		if r.Resumed {
			events[i], counts[i] = "resumed", 0
		}
	}
	res, err := tx.Query(ctx, sqlDispatchMarkSending, tenantID, ids, events, counts, lease.Seconds())
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(res, pgx.RowTo[uuid.UUID])
	return out, translate(err)
}

// Outcomes of a sending attempt (OutboxFinish.Outcome).
const (
	OutcomeHandedOff   = "handed_off"
	OutcomeRetry       = "retry"
	OutcomeDead        = "dead"
	OutcomeRateLimited = "rate_limited"
)

// OutboxFinish is the outcome of one sending attempt.
type OutboxFinish struct {
	ID        uuid.UUID
	AttemptNo int
	Outcome   string
	// ProviderMessageID of a handed-off message.
	ProviderMessageID string
	// Error becomes last_error when not empty.
	Error string
	// Delay before the next attempt (retry) or before the same attempt
	// may be resumed (rate_limited).
	Delay time.Duration
	// ReceiptTimeout, when positive on a hand-off, is how long to wait
	// for a delivered receipt before provider_state becomes timed_out.
	ReceiptTimeout time.Duration
	// Detail is the event's detail (a JSON object) or nil.
	Detail json.RawMessage
	// AcceptProvider records the provider's unknown -> accepted transition
	// with a hand-off (the row's provider state was unknown when claimed).
	AcceptProvider bool
}

// OutboxFinishResult is a row OutboxFinishBatch moved.
type OutboxFinishResult struct {
	ID           uuid.UUID
	AttemptNo    int
	HandoffState HandoffState
	Outcome      string
}

// OutboxFinishBatch records attempts' outcomes, compare-and-set on the
// attempt (a row no longer sending that attempt is left alone and absent
// from the result), appending the events of both state machines
// (mio.dispatch_finish).
func OutboxFinishBatch(ctx context.Context, tx DBTX, tenantID uuid.UUID, items []OutboxFinish) ([]OutboxFinishResult, error) {
	rows, err := tx.Query(ctx, sqlDispatchFinish, finishArgs(tenantID, items)...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, scanFinishResult)
	return out, translate(err)
}

// scanFinishResult reads a row of mio.dispatch_finish.
func scanFinishResult(row pgx.CollectableRow) (OutboxFinishResult, error) {
	var r OutboxFinishResult
	err := row.Scan(&r.ID, &r.AttemptNo, &r.HandoffState, &r.Outcome)
	return r, err
}

// The dispatcher's claim and finish (mio.dispatch_claim,
// mio.dispatch_finish), and the rate-limited claim's steps
// (mio.dispatch_candidates, mio.dispatch_mark_sending, mio.dispatch_probe):
// rows found by primary key and locked version, whatever the statistics
// say. sqlc cannot type plpgsql table
// functions, so they are called here.
const (
	sqlDispatchFinish = `SELECT id, attempt_no, handoff_state, outcome
		FROM mio.dispatch_finish($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	sqlDispatchClaim = `SELECT id, account_id, channel_type, conversation_id, thread_id, text, rich_content,
		attachments, edit_of, prior_state, attempt_no, series_first_attempt, attempts, created_at, provider_state,
		edit_provider_message_id
		FROM mio.dispatch_claim($1, $2, $3)`
	sqlDispatchCandidates = `SELECT id, account_id, channel_type, conversation_id, thread_id, text, rich_content,
		attachments, edit_of, handoff_state, attempt_no, series_first_attempt, attempts, created_at, provider_state,
		account_status, rate_limit_per_sec, rate_limit_burst, max_attempts, edit_provider_message_id
		FROM mio.dispatch_candidates($1, $2)`
	sqlDispatchMarkSending = `SELECT id FROM mio.dispatch_mark_sending($1, $2, $3, $4, $5)`
	sqlDispatchProbe       = `SELECT id, account_id, conversation_id, handoff_state, next_attempt_at, lease_until,
		blocker_state, blocker_next_attempt_at, blocker_lease_until
		FROM mio.dispatch_probe($1, $2)`
)

// finishArgs are the arguments of mio.dispatch_finish (sqlDispatchFinish)
// for items: the tenant, then one array per column of the items.
func finishArgs(tenantID uuid.UUID, items []OutboxFinish) []any {
	n := len(items)
	ids, attemptNos, outcomes := make([]uuid.UUID, n), make([]int32, n), make([]string, n)
	providerMessageIDs, errs := make([]string, n), make([]string, n)
	delaysMs, receiptTimeoutsMs := make([]int64, n), make([]int64, n)
	details, accepts := make([]string, n), make([]bool, n)
	for i, it := range items {
		ids[i], attemptNos[i], outcomes[i] = it.ID, int32(it.AttemptNo), it.Outcome
		providerMessageIDs[i], errs[i] = it.ProviderMessageID, it.Error
		delaysMs[i], receiptTimeoutsMs[i] = it.Delay.Milliseconds(), it.ReceiptTimeout.Milliseconds()
		details[i], accepts[i] = string(it.Detail), it.AcceptProvider
	}
	return []any{tenantID, ids, attemptNos, outcomes, providerMessageIDs, errs, delaysMs, receiptTimeoutsMs, details, accepts}
}

// SweepCandidate is an active outbox row that may have no live dispatch
// job.
type SweepCandidate struct {
	ID             uuid.UUID
	AccountID      uuid.UUID
	ChannelType    string
	ConversationID string
	// JobID is the River job recorded on the row, 0 for none.
	JobID int64
	// Abandoned: the row is sending and its lease ended before
	// SweepParams.LeaseEndedBefore; it needs a job whatever its job's state.
	Abandoned bool
}

// SweepParams bound an OutboxSweepCandidates scan.
type SweepParams struct {
	// Rows due before OverdueBefore (and rows without a job) are looked at,
	// at most ScanRows of them, oldest due first.
	OverdueBefore time.Time
	ScanRows      int
	// Sending rows whose lease ended before LeaseEndedBefore are abandoned.
	LeaseEndedBefore time.Time
}

// OutboxSweepCandidates returns active rows of the tenant that may have
// no live River job: without a job, or overdue. Which of their jobs are
// live is River's to say (the outbox sweeper asks its client).
func OutboxSweepCandidates(ctx context.Context, tx DBTX, tenantID uuid.UUID, p SweepParams) ([]SweepCandidate, error) {
	rows, err := queries().OutboxSweepCandidates(ctx, tx, &dbsqlc.OutboxSweepCandidatesParams{
		TenantID: tenantID, OverdueBefore: p.OverdueBefore, ScanRows: int32(p.ScanRows), LeaseEndedBefore: p.LeaseEndedBefore})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]SweepCandidate, len(rows))
	for i, r := range rows {
		out[i] = SweepCandidate{ID: r.ID, AccountID: r.AccountID, ChannelType: r.ChannelType, ConversationID: r.ConversationID,
			JobID: r.JobID.Int64, Abandoned: r.Abandoned}
	}
	return out, nil
}

// OutboxSetJobs records the River jobs now dispatching rows.
func OutboxSetJobs(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID, jobIDs []int64) error {
	return translate(queries().OutboxSetJobs(ctx, tx, &dbsqlc.OutboxSetJobsParams{TenantID: tenantID, Ids: ids, JobIds: jobIDs}))
}

// OutboxHoldLease holds the lease of resumed rows (sending, lease over)
// denied a rate-limit token until their turn: waits[i] from now for
// ids[i]. Rows not sending are left alone. Call it in the claim's
// transaction, on rows it locked (OutboxClaimCandidates).
func OutboxHoldLease(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID, waits []time.Duration) error {
	secs := make([]float64, len(waits))
	for i, w := range waits {
		secs[i] = w.Seconds()
	}
	return translate(queries().OutboxHoldLease(ctx, tx, &dbsqlc.OutboxHoldLeaseParams{TenantID: tenantID, Ids: ids, WaitSeconds: secs}))
}

// RateWant asks a bucket for tokens.
type RateWant struct {
	Key   string
	Rate  float64 // tokens per second, > 0
	Burst float64 // bucket size, >= 1
	N     int
}

// RateGrant is what a bucket granted; Wait is the time until its next
// token when Granted < N.
type RateGrant struct {
	Key     string
	Granted int
	Wait    time.Duration
}

// RateTake takes tokens from the tenant's buckets (mio.rate_take), one
// entry per want, in order. now nil uses the database clock (every
// replica shares it); tests inject a clock. Each key at most once.
func RateTake(ctx context.Context, tx DBTX, tenantID uuid.UUID, wants []RateWant, now *time.Time) ([]RateGrant, error) {
	p := &dbsqlc.RateTakeParams{TenantID: tenantID, Now: now,
		BucketKeys: make([]string, len(wants)), Rates: make([]float64, len(wants)),
		Bursts: make([]float64, len(wants)), Wants: make([]int32, len(wants))}
	for i, w := range wants {
		p.BucketKeys[i], p.Rates[i], p.Bursts[i], p.Wants[i] = w.Key, w.Rate, w.Burst, int32(w.N)
	}
	rows, err := queries().RateTake(ctx, tx, p)
	if err != nil {
		return nil, translate(err)
	}
	byKey := make(map[string]dbsqlc.RateTakeRow, len(rows))
	for _, r := range rows {
		byKey[r.BucketKey] = r
	}
	out := make([]RateGrant, len(wants))
	for i, w := range wants {
		r := byKey[w.Key]
		out[i] = RateGrant{Key: w.Key, Granted: int(r.Granted), Wait: time.Duration(r.WaitSeconds * float64(time.Second))}
	}
	return out, nil
}

// RateBucketPrune deletes at most maxRows of the tenant's buckets unused
// since before (they would be full again) and returns how many.
func RateBucketPrune(ctx context.Context, tx DBTX, tenantID uuid.UUID, before time.Time, maxRows int) (int64, error) {
	n, err := queries().RateBucketPrune(ctx, tx, &dbsqlc.RateBucketPruneParams{TenantID: tenantID, Before: before, MaxRows: int32(maxRows)})
	return n, translate(err)
}

// OutboxSweepLockKey is the advisory lock a pass of the outbox sweeper
// holds for its transaction ("mios" in ASCII), so that the sweepers of
// several worker processes take turns.
const OutboxSweepLockKey int64 = 0x6D696F73

// OutboxSweepLock takes OutboxSweepLockKey for the rest of tx without
// waiting, and reports whether it did (false: another pass holds it).
func OutboxSweepLock(ctx context.Context, tx DBTX) (bool, error) {
	ok, err := queries().OutboxSweepLock(ctx, tx, &dbsqlc.OutboxSweepLockParams{LockKey: OutboxSweepLockKey})
	return ok, translate(err)
}

// SetDispatchTenant scopes the rest of tx to tenantID with the settings
// of a BeginDispatch transaction.
func SetDispatchTenant(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) error {
	if err := SetTenant(ctx, tx, tenantID); err != nil {
		return err
	}
	return customPlans(ctx, tx)
}

// BeginDispatch begins a transaction scoped to tenantID for the
// dispatcher's batched statements, in one round trip. Its statements are
// planned for their actual parameters (plan_cache_mode =
// force_custom_plan): a cached generic plan cannot see how many ids a
// batch holds and, on a fast-growing outbox, scans the whole active set.
// JIT is off: these short statements never repay a compilation.
func BeginDispatch(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID) (pgx.Tx, error) {
	if tenantID == uuid.Nil {
		return nil, ErrNoTenant
	}
	return pool.BeginTx(ctx, pgx.TxOptions{
		BeginQuery: "BEGIN; SELECT set_config('app.current_tenant_id', '" + tenantID.String() + "', true), " +
			"set_config('plan_cache_mode', 'force_custom_plan', true), set_config('jit', 'off', true)",
	})
}

// InDispatchTx runs fn in a BeginDispatch transaction.
func InDispatchTx(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, fn func(tx pgx.Tx) error) error {
	tx, err := BeginDispatch(ctx, pool, tenantID)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
