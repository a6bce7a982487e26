package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

type outboxBundle struct {
	env     *dbtest.Env
	tenant  uuid.UUID
	account uuid.UUID
}

func newOutboxBundle(t *testing.T) *outboxBundle {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	tn, err := db.TenantInsert(ctx, env.Pool, uuid.Nil, "t")
	require.NoError(t, err)
	b := &outboxBundle{env: env, tenant: tn.ID}
	b.tx(t, func(tx pgx.Tx) error {
		a, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: tn.ID, ChannelType: "webhook", DisplayName: "w"})
		if err == nil {
			b.account = a.ID
		}
		return err
	})
	return b
}

func (b *outboxBundle) tx(t *testing.T, fn func(tx pgx.Tx) error) {
	t.Helper()
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, fn))
}

func (b *outboxBundle) insert(t *testing.T, key, conv string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	b.tx(t, func(tx pgx.Tx) error {
		ins, err := db.OutboxInsertBatch(context.Background(), tx, b.tenant, []db.OutboxNew{{ID: id, AccountID: b.account,
			ChannelType: "webhook", ConversationID: conv, IdempotencyKey: key, RequestSHA256: make([]byte, 32), Text: "x"}})
		require.Len(t, ins, 1)
		return err
	})
	return id
}

// TestRateTake checks the shared token bucket with an injected clock:
// a full burst at first use, refill at the rate up to the burst, partial
// grants and the wait until the next token.
func TestRateTake(t *testing.T) {
	t.Parallel()
	b := newOutboxBundle(t)
	ctx := context.Background()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	take := func(at time.Duration, n int) db.RateGrant {
		var g []db.RateGrant
		now := t0.Add(at)
		b.tx(t, func(tx pgx.Tx) error {
			var err error
			g, err = db.RateTake(ctx, tx, b.tenant, []db.RateWant{{Key: "a:k", Rate: 5, Burst: 5, N: n}}, &now)
			return err
		})
		return g[0]
	}
	steps := []struct {
		name    string
		at      time.Duration
		n       int
		granted int
		wait    time.Duration
	}{
		{"full burst at first use", 0, 3, 3, 0},
		{"the rest of the burst, then empty", 0, 4, 2, 200 * time.Millisecond},
		{"empty", 100 * time.Millisecond, 1, 0, 100 * time.Millisecond},
		{"one token after 1/rate", 200 * time.Millisecond, 2, 1, 200 * time.Millisecond},
		{"refill caps at the burst", 10 * time.Second, 10, 5, 200 * time.Millisecond},
		{"a clock going backwards grants nothing new", 9 * time.Second, 1, 0, 200 * time.Millisecond},
		{"exactly the rate over a second", 11 * time.Second, 5, 5, 0},
	}
	for _, s := range steps {
		g := take(s.at, s.n)
		require.Equal(t, s.granted, g.Granted, s.name)
		require.InDelta(t, s.wait.Seconds(), g.Wait.Seconds(), 0.001, s.name)
	}

	// Over a simulated 10 s at 5/s with burst 1, callers asking every
	// 10 ms get 1 + 50 tokens.
	total := 0
	start := t0.Add(time.Hour)
	for ms := 0; ms <= 10_000; ms += 10 {
		now := start.Add(time.Duration(ms) * time.Millisecond)
		b.tx(t, func(tx pgx.Tx) error {
			g, err := db.RateTake(ctx, tx, b.tenant, []db.RateWant{{Key: "a:sim", Rate: 5, Burst: 1, N: 3}}, &now)
			if err == nil {
				total += g[0].Granted
			}
			return err
		})
	}
	require.Equal(t, 51, total)
}

// TestOutboxStateMachine checks compare-and-set on (attempt, rank): an
// outcome for an attempt that is no longer current changes nothing, and
// provider states never move backwards.
func TestOutboxStateMachine(t *testing.T) {
	t.Parallel()
	b := newOutboxBundle(t)
	ctx := context.Background()
	id := b.insert(t, "k1", "c1")
	claim := func() []uuid.UUID {
		var moved []uuid.UUID
		b.tx(t, func(tx pgx.Tx) error {
			c, err := db.OutboxClaimCandidates(ctx, tx, b.tenant, []uuid.UUID{id})
			if err != nil || len(c) == 0 {
				return err
			}
			moved, err = db.OutboxMarkSending(ctx, tx, b.tenant, time.Minute, []db.MarkSending{{ID: id}})
			return err
		})
		return moved
	}
	finish := func(f db.OutboxFinish) int {
		var res []db.OutboxFinishResult
		b.tx(t, func(tx pgx.Tx) error {
			var err error
			res, err = db.OutboxFinishBatch(ctx, tx, b.tenant, []db.OutboxFinish{f})
			return err
		})
		return len(res)
	}
	get := func() *db.Outbound {
		var o *db.Outbound
		b.tx(t, func(tx pgx.Tx) error {
			var err error
			o, err = db.OutboxGet(ctx, tx, b.tenant, id)
			return err
		})
		return o
	}

	require.Equal(t, []uuid.UUID{id}, claim())
	require.Empty(t, claim(), "a sending row under lease is not claimable")
	require.Equal(t, 1, finish(db.OutboxFinish{ID: id, AttemptNo: 1, Outcome: db.OutcomeRetry, Error: "503"}))
	require.Equal(t, 0, finish(db.OutboxFinish{ID: id, AttemptNo: 1, Outcome: db.OutcomeHandedOff}),
		"a late outcome of attempt 1 cannot overwrite attempt 2")
	o := get()
	require.Equal(t, db.HandoffQueued, o.HandoffState)
	require.Equal(t, 2, o.AttemptNo)
	require.Equal(t, "503", o.LastError)

	// Attempt 2 is due at once (no delay given).
	require.Equal(t, []uuid.UUID{id}, claim())
	require.Equal(t, 1, finish(db.OutboxFinish{ID: id, AttemptNo: 2, Outcome: db.OutcomeHandedOff, ProviderMessageID: "p-1"}))
	require.Equal(t, 0, finish(db.OutboxFinish{ID: id, AttemptNo: 2, Outcome: db.OutcomeDead}),
		"handed_off(100) is final for its attempt")
	o = get()
	require.Equal(t, db.HandoffHandedOff, o.HandoffState)
	require.Equal(t, db.ProviderAccepted, o.ProviderState)

	advance := func(state db.ProviderState) {
		b.tx(t, func(tx pgx.Tx) error {
			_, err := db.OutboxProviderAdvance(ctx, tx, b.tenant, []db.ProviderAdvance{{ID: id, State: state}})
			return err
		})
	}
	advance(db.ProviderRead)
	advance(db.ProviderDelivered)
	require.Equal(t, db.ProviderRead, get().ProviderState, "delivered after read does not move back")
	advance(db.ProviderFailed)
	require.Equal(t, db.ProviderFailed, get().ProviderState)
}

// TestOutboxFinishAfterConcurrentUpdate: an outcome is recorded on a
// sending row that another transaction updated while the finish waited for
// its lock — the outbox sweeper giving the row a new job just as its
// resumed send started. The finish finds its rows by TID; the row's new
// version has another, and the finish looks it up again instead of
// dropping the outcome (the send would be made a second time after the
// lease). An outcome of an attempt that moved on is still left out.
func TestOutboxFinishAfterConcurrentUpdate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		rows    int
		updated []int // rows the sweeper updates
	}{
		{"the only row", 1, []int{0}},
		{"two rows of three", 3, []int{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newOutboxBundle(t)
			ctx := context.Background()
			var ids, marks = []uuid.UUID{}, []db.MarkSending{}
			for i := range c.rows {
				ids = append(ids, b.insert(t, fmt.Sprintf("k%d", i), fmt.Sprintf("c%d", i)))
				marks = append(marks, db.MarkSending{ID: ids[i]})
			}
			b.tx(t, func(tx pgx.Tx) error {
				if _, err := db.OutboxClaimCandidates(ctx, tx, b.tenant, ids); err != nil {
					return err
				}
				moved, err := db.OutboxMarkSending(ctx, tx, b.tenant, time.Minute, marks)
				require.Len(t, moved, len(ids))
				return err
			})

			// The sweeper's update, held open.
			sweep, err := b.env.Pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = sweep.Rollback(ctx) }()
			require.NoError(t, db.SetDispatchTenant(ctx, sweep, b.tenant))
			var swept []uuid.UUID
			var jobs []int64
			for _, i := range c.updated {
				swept, jobs = append(swept, ids[i]), append(jobs, int64(40+i))
			}
			require.NoError(t, db.OutboxSetJobs(ctx, sweep, b.tenant, swept, jobs))

			// Each row handed off, and a late outcome of the first row's
			// attempt 0, which is not its attempt.
			finishes := []db.OutboxFinish{{ID: ids[0], AttemptNo: 0, Outcome: db.OutcomeDead, Error: "late"}}
			for i, id := range ids {
				finishes = append(finishes, db.OutboxFinish{ID: id, AttemptNo: 1, Outcome: db.OutcomeHandedOff,
					ProviderMessageID: fmt.Sprintf("p-%d", i)})
			}
			owner, err := pgx.Connect(ctx, b.env.OwnerURL)
			require.NoError(t, err)
			defer owner.Close(ctx)
			done := make(chan []db.OutboxFinishResult, 1)
			go func() {
				var res []db.OutboxFinishResult
				err := db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
					var err error
					res, err = db.OutboxFinishBatch(ctx, tx, b.tenant, finishes)
					return err
				})
				assert.NoError(t, err)
				done <- res
			}()
			require.Eventually(t, func() bool {
				var n int
				err := owner.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
				return err == nil && n == 1
			}, 10*time.Second, 5*time.Millisecond, "the finish waits for the sweeper's lock")
			require.NoError(t, sweep.Commit(ctx))

			res := <-done
			require.Len(t, res, len(ids), "every outcome of a current attempt recorded")
			b.tx(t, func(tx pgx.Tx) error {
				for i, id := range ids {
					o, err := db.OutboxGet(ctx, tx, b.tenant, id)
					require.NoError(t, err)
					require.Equal(t, db.HandoffHandedOff, o.HandoffState, "row %d", i)
					require.Equal(t, fmt.Sprintf("p-%d", i), o.ProviderMessageID, "row %d", i)
				}
				return nil
			})
		})
	}
}

// TestOutboxLaneOrder: only the first active row of an (account,
// conversation) lane can be claimed; other lanes are independent.
func TestOutboxLaneOrder(t *testing.T) {
	t.Parallel()
	b := newOutboxBundle(t)
	ctx := context.Background()
	a1 := b.insert(t, "a1", "lane-a")
	a2 := b.insert(t, "a2", "lane-a")
	c1 := b.insert(t, "c1", "lane-c")
	var got []uuid.UUID
	b.tx(t, func(tx pgx.Tx) error {
		c, err := db.OutboxClaimCandidates(ctx, tx, b.tenant, []uuid.UUID{a2, a1, c1})
		for _, x := range c {
			got = append(got, x.ID)
		}
		return err
	})
	require.ElementsMatch(t, []uuid.UUID{a1, c1}, got)
}

// TestOutboxIdempotencyKey: a tenant's idempotency key is used once;
// another tenant may use the same key.
func TestOutboxIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := newOutboxBundle(t)
	b.insert(t, "same", "c")
	b.tx(t, func(tx pgx.Tx) error {
		ins, err := db.OutboxInsertBatch(context.Background(), tx, b.tenant, []db.OutboxNew{{ID: uuid.New(), AccountID: b.account,
			ChannelType: "webhook", ConversationID: "c", IdempotencyKey: "same", RequestSHA256: make([]byte, 32)}})
		require.Empty(t, ins)
		return err
	})
}
