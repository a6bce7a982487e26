package db_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/internal/dbsqlc"
)

// TestConversationPageReadsItsIndexes: a conversation's history reads
// its own rows by the conversation indexes, not the account's other
// conversations, even under a generic plan on statistics taken while the
// tables were nearly empty; and pages come back in time order.
func TestConversationPageReadsItsIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newOutboxBundle(t)
	owner := b.env.OwnerPool(t)
	b.insert(t, "first", "c")
	_, err := owner.Exec(ctx, `ANALYZE mio.outbox; ANALYZE mio.inbox`)
	require.NoError(t, err)
	_, err = owner.Exec(ctx, `
		INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key, request_sha256)
		SELECT $1, gen_random_uuid(), $2, 'webhook', 'other' || (n % 10), 'k' || n, '\x00'::bytea FROM generate_series(1, 3000) AS n`,
		b.tenant, b.account)
	require.NoError(t, err)
	_, err = owner.Exec(ctx, `
		INSERT INTO mio.inbox (tenant_id, id, account_id, channel_type, conversation_id, source_message_id, state, envelope, received_at)
		SELECT $1, gen_random_uuid(), $2, 'webhook', 'other' || (n % 10), 's' || n, 'received', '{}', now() FROM generate_series(1, 3000) AS n`,
		b.tenant, b.account)
	require.NoError(t, err)

	args := []string{fmt.Sprintf("'%s'", b.tenant), fmt.Sprintf("'%s'", b.account), "'c'", "'9999-01-01'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "21"}
	filtered := regexp.MustCompile(`Rows Removed by Filter: \d{3,}`)
	for _, c := range []struct{ name, stmt, index string }{
		{"OutboxConversationPage", dbsqlc.OutboxConversationPage, "outbox_conversation"},
		{"InboxConversationPage", dbsqlc.InboxConversationPage, "conversation"},
	} {
		var out []string
		b.tx(t, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `PREPARE page AS `+c.stmt); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE page(`+strings.Join(args, ", ")+`)`)
			if err != nil {
				return err
			}
			if out, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `DEALLOCATE page`)
			return err
		})
		plan := strings.Join(out, "\n")
		require.NotRegexp(t, filtered, plan, "%s filtered other conversations:\n%s", c.name, plan)
		require.Contains(t, plan, c.index, "%s:\n%s", c.name, plan)
	}

	// Both directions, oldest first; the page before the first.
	var items []db.ConversationItem
	var more bool
	b.tx(t, func(tx pgx.Tx) error {
		items, more, err = db.ConversationPage(ctx, tx, b.tenant, db.ConversationPageParams{AccountID: b.account, ConversationID: "other1", Limit: 50})
		return err
	})
	require.Len(t, items, 50)
	require.True(t, more)
	for i := 1; i < len(items); i++ {
		require.False(t, items[i].At.Before(items[i-1].At), "oldest first")
	}
	var older []db.ConversationItem
	b.tx(t, func(tx pgx.Tx) error {
		older, _, err = db.ConversationPage(ctx, tx, b.tenant, db.ConversationPageParams{AccountID: b.account, ConversationID: "other1",
			Before: items[0].Cursor(), Limit: 50})
		return err
	})
	require.Len(t, older, 50)
	require.False(t, older[len(older)-1].At.After(items[0].At))
	require.NotEqual(t, older[len(older)-1].ID, items[0].ID)
}
