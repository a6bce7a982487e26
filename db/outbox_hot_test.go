package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
)

// TestClaimsAreHeapOnlyUpdates: claiming a queued row (queued -> sending)
// is a HOT update — no index entry written — in both claim forms, the
// dispatcher's claim (mio.dispatch_claim) and the rate-limited claim's
// mark (mio.dispatch_mark_sending). It needs no indexed column to change
// (the indexes name the generated `active`, never handoff_state) and room
// for the new version on the row's page: the outbox's fillfactor of 45.
// At 60 only about two claims in three are HOT, and each of the others
// writes an entry in four indexes; this test fails there.
//
// Rows are enqueued as the API does (db.OutboxInsertBatch), in batches,
// with replies of 40 to 600 bytes; the counts come from
// pg_stat_xact_user_tables, which shows the transaction's own updates.
func TestClaimsAreHeapOnlyUpdates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)

	const n = 600
	ids := make([]uuid.UUID, 0, n)
	for batch := range n / 100 {
		rows := make([]db.OutboxNew, 100)
		for i := range rows {
			k := batch*100 + i
			rows[i] = db.OutboxNew{ID: uuid.Must(uuid.NewV7()), AccountID: b.account, ChannelType: "webhook",
				ConversationID: fmt.Sprintf("conv-%d", k), IdempotencyKey: fmt.Sprintf("key-%d", k),
				RequestSHA256: make([]byte, 32), Text: strings.Repeat("reply ", 7+(k*37)%94)}
			ids = append(ids, rows[i].ID)
		}
		b.tx(t, func(tx pgx.Tx) error {
			ins, err := db.OutboxInsertBatch(ctx, tx, b.tenant, rows)
			require.Len(t, ins, len(rows))
			return err
		})
	}

	// updates returns the outbox's updates in tx so far, and how many were
	// HOT.
	updates := func(tx pgx.Tx) (all, hot int64) {
		require.NoError(t, tx.QueryRow(ctx, `SELECT coalesce(n_tup_upd, 0), coalesce(n_tup_hot_upd, 0)
			FROM pg_stat_xact_user_tables WHERE schemaname = 'mio' AND relname = 'outbox'`).Scan(&all, &hot))
		return all, hot
	}
	b.tx(t, func(tx pgx.Tx) error {
		claimed, err := claimOnly(ctx, tx, b.tenant, ids[:n/2])
		require.NoError(t, err)
		require.Len(t, claimed, n/2)

		cands, err := db.OutboxClaimCandidates(ctx, tx, b.tenant, ids[n/2:])
		require.NoError(t, err)
		require.Len(t, cands, n/2)
		marks := make([]db.MarkSending, len(cands))
		for i, c := range cands {
			marks[i] = db.MarkSending{ID: c.ID}
		}
		moved, err := db.OutboxMarkSending(ctx, tx, b.tenant, 30*time.Second, marks)
		require.NoError(t, err)
		require.Len(t, moved, n/2)

		all, hot := updates(tx)
		require.Equal(t, int64(n), all, "one update a claimed row")
		require.Equal(t, int64(n), hot, "claims that were not HOT updates: %d of %d", all-hot, all)
		return nil
	})
}
