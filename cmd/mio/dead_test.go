package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

// TestAdminDeadCLI: mio admin dead list|show|requeue|discard over
// dead outbound messages of two tenants.
func TestAdminDeadCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	base := []string{"MIO_DATABASE_URL=" + env.OwnerURL}

	dead, tenants := map[string]uuid.UUID{}, map[string]uuid.UUID{}
	for _, name := range []string{"a", "b"} {
		tn, err := db.TenantInsert(ctx, env.Pool, uuid.Nil, name)
		require.NoError(t, err)
		tenants[name] = tn.ID
		require.NoError(t, db.InTenantTx(ctx, env.Pool, tn.ID, func(tx pgx.Tx) error {
			acct, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: tn.ID, ChannelType: "slack", DisplayName: "s"})
			if err != nil {
				return err
			}
			id := uuid.New()
			if _, err := db.OutboxInsertBatch(ctx, tx, tn.ID, []db.OutboxNew{{ID: id, AccountID: acct.ID, ChannelType: "slack",
				ConversationID: "C1", IdempotencyKey: "k", RequestSHA256: make([]byte, 32), Text: "hi"}}); err != nil {
				return err
			}
			dead[name] = id
			_, err = tx.Exec(ctx, `UPDATE mio.outbox SET handoff_state = 'dead', attempts = 5, dead_at = now(),
				last_error = 'slack: chat.postMessage: channel_not_found' WHERE id = $1`, id)
			return err
		}))
	}

	r := runMio(t, base, "admin", "dead", "list")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, dead["a"].String())
	require.Contains(t, r.stdout, dead["b"].String())
	require.Contains(t, r.stdout, "channel_not_found")

	r = runMio(t, base, "admin", "dead", "list", "consumer")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stdout, dead["a"].String())

	r = runMio(t, base, "admin", "dead", "show", dead["a"].String())
	require.Zero(t, r.code, r.stderr)
	var shown []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	require.Len(t, shown, 1)
	require.Equal(t, "outbound", shown[0]["kind"])
	require.NotEmpty(t, shown[0]["events"])

	r = runMio(t, base, "admin", "dead", "requeue", dead["a"].String())
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, `"items": 1`)
	require.Contains(t, r.stdout, `"changed": true`)
	r = runMio(t, base, "admin", "dead", "requeue", dead["a"].String())
	require.Zero(t, r.code, "requeueing twice is a safe no-op: %s", r.stderr)
	require.Contains(t, r.stdout, `"changed": false`)
	r = runMio(t, base, "admin", "dead", "requeue", uuid.NewString())
	require.Equal(t, 1, r.code, "an id naming nothing")
	require.Contains(t, r.stderr, "no dead letter")

	r = runMio(t, base, "admin", "dead", "discard", dead["b"].String())
	require.Zero(t, r.code, r.stderr)
	r = runMio(t, base, "admin", "dead", "list")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stdout, dead["b"].String())
	require.NotContains(t, r.stdout, dead["a"].String())

	r = runMio(t, base, "admin", "dead", "show", "not-a-uuid")
	require.Equal(t, 2, r.code)

	// The requeued message, found by state and conversation.
	r = runMio(t, base, "admin", "outbound", "search", "--tenant", tenants["a"].String(), "--state", "queued", "--conversation", "C1")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, dead["a"].String())
	r = runMio(t, base, "admin", "outbound", "search", "--tenant", tenants["a"].String(), "--state", "dead")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, `"items": []`)
	r = runMio(t, base, "admin", "outbound", "search", "--tenant", tenants["a"].String(), "--state", "lost")
	require.Equal(t, 2, r.code)
}
