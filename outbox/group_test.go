package outbox_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/outbox"
)

// TestGroupCommitSends: concurrent sends of two tenants share
// transactions; each is answered as if it had been alone — accepted,
// replayed, conflicting or refused — and a refused send writes nothing
// and fails none of its batch-mates. Every accepted row has its event and
// a job that names it, under its own tenant (rows of one account written
// together share a job).
func TestGroupCommitSends(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var batches []int
	var tookAll time.Duration
	var mu sync.Mutex
	stop := b.svc.StartGroupCommit(groupcommit.Config{Window: 20 * time.Millisecond, MaxBatch: 100, Flushers: 1,
		OnBatch: func(n int, took time.Duration) {
			mu.Lock()
			batches, tookAll = append(batches, n), tookAll+took
			mu.Unlock()
		}})
	defer stop()

	prior, err := b.svc.Send(t.Context(), b.a.id, b.a.cmd("prior"))
	require.NoError(t, err)

	type call struct {
		tenant uuid.UUID
		cmd    *envelope.SendCommand
		check  func(t *testing.T, s *outbox.Sent, err error)
	}
	accepted := func(t *testing.T, s *outbox.Sent, err error) {
		require.NoError(t, err)
		require.False(t, s.Replayed)
		require.Equal(t, db.HandoffQueued, s.HandoffState)
	}
	var calls []call
	for i := range 20 {
		calls = append(calls, call{b.a.id, b.a.cmd(fmt.Sprintf("a-%d", i)), accepted}, call{b.b.id, b.b.cmd(fmt.Sprintf("b-%d", i)), accepted})
	}
	conflict := b.a.cmd("prior")
	conflict.Text = "not the same"
	unknown := b.a.cmd("unknown-account")
	unknown.AccountID = uuid.New()
	foreign := b.a.cmd("foreign-account")
	foreign.AccountID = b.b.account
	disabled := b.a.cmd("disabled")
	disabled.AccountID = b.a.disabled
	badEdit := b.a.cmd("bad-edit")
	badEdit.EditOf = &prior.ID
	badEdit.ConversationID = "another"
	goodEdit := b.a.cmd("good-edit")
	goodEdit.EditOf = &prior.ID
	calls = append(calls,
		call{b.a.id, b.a.cmd("prior"), func(t *testing.T, s *outbox.Sent, err error) {
			require.NoError(t, err)
			require.Equal(t, &outbox.Sent{ID: prior.ID, HandoffState: db.HandoffQueued, Replayed: true}, s)
		}},
		call{b.a.id, conflict, func(t *testing.T, _ *outbox.Sent, err error) { require.ErrorIs(t, err, outbox.ErrKeyConflict) }},
		call{b.a.id, unknown, func(t *testing.T, _ *outbox.Sent, err error) { require.ErrorIs(t, err, outbox.ErrAccountNotFound) }},
		call{b.a.id, foreign, func(t *testing.T, _ *outbox.Sent, err error) { require.ErrorIs(t, err, outbox.ErrAccountNotFound) }},
		call{b.a.id, disabled, func(t *testing.T, _ *outbox.Sent, err error) { require.ErrorIs(t, err, outbox.ErrAccountDisabled) }},
		call{b.a.id, badEdit, func(t *testing.T, _ *outbox.Sent, err error) {
			var ve *outbox.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, "edit_of", ve.Field)
		}},
		call{b.a.id, goodEdit, accepted},
	)
	results := make([]struct {
		s   *outbox.Sent
		err error
	}, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].s, results[i].err = b.svc.Send(t.Context(), c.tenant, c.cmd)
		}()
	}
	wg.Wait()
	for i, c := range calls {
		t.Run(c.cmd.IdempotencyKey, func(t *testing.T) { c.check(t, results[i].s, results[i].err) })
	}
	// prior + 40 + the good edit: rows and events alike; the rows of one
	// account in one transaction share a job (at least one per tenant,
	// at most one per row).
	counts := b.counts(t)
	require.Equal(t, [2]int{42, 42}, [2]int{counts[0], counts[1]})
	require.GreaterOrEqual(t, counts[2], 3, "the prior's job and one per tenant at least")
	require.LessOrEqual(t, counts[2], 42, "at most one per row (TestSendBatch counts the groups)")
	var wrongTenant int
	require.NoError(t, b.owner.QueryRow(t.Context(), `SELECT
		count(*) FILTER (WHERE (o.tenant_id = $1) <> (o.idempotency_key NOT LIKE 'b-%'))
		FROM mio.outbox o`, b.a.id).Scan(&wrongTenant))
	require.Zero(t, wrongTenant, "every row under its own tenant")
	rows, names := b.jobsMisnamed(t)
	require.Zero(t, rows, "every row's job names it, under its tenant")
	require.Zero(t, names, "every row a job names records that job")
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, len(calls)+1, len(batches), "concurrent sends shared transactions: %v", batches)
	require.Positive(t, tookAll, "each batch reports its transaction's time")
}

// TestGroupCommitSameKeyTwice: the same key sent twice in one group — a
// batch, or two Sends gathered by group commit, whose three-round-trip
// transaction then fails on the key and is done again statement by
// statement — stores one message and one job; the other send answers
// with it, or with a conflict when its command differs.
func TestGroupCommitSameKeyTwice(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"batch", "group commit"} {
		for _, differ := range []bool{false, true} {
			t.Run(fmt.Sprint(how, " differ=", differ), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				cmds := []*envelope.SendCommand{b.a.cmd("twice"), b.a.cmd("twice")}
				if differ {
					cmds[1].Text = "other"
				}
				items := make([]outbox.BatchItem, 2)
				if how == "batch" {
					var err error
					items, err = b.svc.SendBatch(t.Context(), b.a.id, cmds)
					require.NoError(t, err)
				} else {
					var batches []int
					var mu sync.Mutex
					stop := b.svc.StartGroupCommit(groupcommit.Config{Window: time.Second, MaxBatch: 2, Flushers: 1,
						OnBatch: func(n int, _ time.Duration) { mu.Lock(); batches = append(batches, n); mu.Unlock() }})
					var wg sync.WaitGroup
					for i := range cmds {
						wg.Go(func() { items[i].Sent, items[i].Err = b.svc.Send(t.Context(), b.a.id, cmds[i]) })
					}
					wg.Wait()
					stop()
					require.Equal(t, []int{2}, batches, "both sends in one group")
					if items[0].Err != nil || items[0].Sent.Replayed {
						items[0], items[1] = items[1], items[0] // the first to arrive wins: put it first
					}
				}
				require.NoError(t, items[0].Err)
				require.False(t, items[0].Sent.Replayed)
				if differ {
					require.ErrorIs(t, items[1].Err, outbox.ErrKeyConflict)
				} else {
					require.NoError(t, items[1].Err)
					require.Equal(t, &outbox.Sent{ID: items[0].Sent.ID, HandoffState: db.HandoffQueued, Replayed: true}, items[1].Sent)
				}
				require.Equal(t, [3]int{1, 1, 1}, b.counts(t), "one message, one job")
			})
		}
	}
}

// TestGroupCommitReplaysUnread: group commit writes a group without
// reading its idempotency keys first, yet answers every replay as if it
// had. Each case starts on a fresh service (after a replay or a refusal
// groups read their keys for a while): a replay is answered with its
// message, a different command under a used key with ErrKeyConflict,
// and a replay whose account was disabled since as a replay — not
// refused by checks a replay does not go through. Nothing of them is
// written.
func TestGroupCommitReplaysUnread(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"replay", "conflict", "replay of a disabled account", "replay of an edit of a disabled account"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := t.Context()
			// What the case replays, sent before group commit starts.
			first, err := b.svc.Send(ctx, b.a.id, b.a.cmd("first"))
			require.NoError(t, err)
			edit := b.a.cmd("edit")
			edit.EditOf = &first.ID
			edited, err := b.svc.Send(ctx, b.a.id, edit)
			require.NoError(t, err)
			stop := b.svc.StartGroupCommit(groupcommit.Config{Window: time.Millisecond, Flushers: 1})
			defer stop()
			replayOf := func(id uuid.UUID) *outbox.Sent {
				return &outbox.Sent{ID: id, HandoffState: db.HandoffQueued, Replayed: true}
			}
			switch c {
			case "replay":
				got, err := b.svc.Send(ctx, b.a.id, b.a.cmd("first"))
				require.NoError(t, err)
				require.Equal(t, replayOf(first.ID), got)
			case "conflict":
				other := b.a.cmd("first")
				other.Text = "not the same"
				_, err := b.svc.Send(ctx, b.a.id, other)
				require.ErrorIs(t, err, outbox.ErrKeyConflict)
			case "replay of a disabled account", "replay of an edit of a disabled account":
				b.exec(t, `UPDATE mio.accounts SET status = 'disabled' WHERE id = $1`, b.a.account)
				cmd, want := b.a.cmd("first"), replayOf(first.ID)
				if c == "replay of an edit of a disabled account" {
					cmd, want = edit, replayOf(edited.ID)
				}
				got, err := b.svc.Send(ctx, b.a.id, cmd)
				require.NoError(t, err)
				require.Equal(t, want, got)
				_, err = b.svc.Send(ctx, b.a.id, b.a.cmd("refused"))
				require.ErrorIs(t, err, outbox.ErrAccountDisabled)
			}
			require.Equal(t, [3]int{2, 2, 2}, b.counts(t), "replays, conflicts and refusals wrote nothing")
			rows, names := b.jobsMisnamed(t)
			require.Zero(t, rows+names)
		})
	}
}

// TestSendBatch: one transaction for many commands, each answered on its
// own; malformed and refused commands write nothing; limits are checked.
func TestSendBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var cmds []*envelope.SendCommand
	for i := range outbox.MaxBatch - 2 {
		cmds = append(cmds, b.a.cmd(fmt.Sprintf("k-%d", i)))
	}
	malformed := b.a.cmd("")
	unknown := b.a.cmd("unknown")
	unknown.AccountID = uuid.New()
	cmds = append(cmds, malformed, unknown)
	items, err := b.svc.SendBatch(t.Context(), b.a.id, cmds)
	require.NoError(t, err)
	require.Len(t, items, outbox.MaxBatch)
	ids := map[uuid.UUID]bool{}
	for i, it := range items[:outbox.MaxBatch-2] {
		require.NoError(t, it.Err, "item %d", i)
		ids[it.Sent.ID] = true
	}
	require.Len(t, ids, outbox.MaxBatch-2, "distinct ids")
	var ve *outbox.ValidationError
	require.ErrorAs(t, items[outbox.MaxBatch-2].Err, &ve)
	require.Equal(t, fmt.Sprintf("commands[%d].idempotency_key", outbox.MaxBatch-2), ve.Field)
	require.ErrorIs(t, items[outbox.MaxBatch-1].Err, outbox.ErrAccountNotFound)
	n := outbox.MaxBatch - 2
	jobs := (n + outbox.JobGroupRows - 1) / outbox.JobGroupRows // one per group of an account's rows
	require.Equal(t, [3]int{n, n, jobs}, b.counts(t))
	rows, names := b.jobsMisnamed(t)
	require.Zero(t, rows+names, "every row's job names it")

	// Replayed as a whole: the same ids, nothing new.
	again, err := b.svc.SendBatch(t.Context(), b.a.id, cmds[:n])
	require.NoError(t, err)
	for i, it := range again {
		require.NoError(t, it.Err)
		require.True(t, it.Sent.Replayed)
		require.Equal(t, items[i].Sent.ID, it.Sent.ID)
	}
	require.Equal(t, [3]int{n, n, jobs}, b.counts(t))

	for _, bad := range [][]*envelope.SendCommand{nil, make([]*envelope.SendCommand, outbox.MaxBatch+1)} {
		_, err := b.svc.SendBatch(t.Context(), b.a.id, bad)
		require.True(t, errors.As(err, &ve), "batch of %d: %v", len(bad), err)
		require.Equal(t, "commands", ve.Field)
	}
	require.Equal(t, [3]int{n, n, jobs}, b.counts(t))
}
