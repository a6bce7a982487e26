package outbox_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/groupcommit"
)

// TestSendKeepsTraceparent: a send's trace context is stored with its row,
// alone and under group commit, and is not part of the request an
// idempotency key names (a retry under another trace is a replay).
func TestSendKeepsTraceparent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const tp1 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const tp2 = "00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"
	alone := b.a.cmd("alone")
	alone.Traceparent = tp1
	s1, err := b.svc.Send(t.Context(), b.a.id, alone)
	require.NoError(t, err)

	stop := b.svc.StartGroupCommit(groupcommit.Config{Window: time.Millisecond, Flushers: 1})
	defer stop()
	grouped := b.a.cmd("grouped")
	grouped.Traceparent = tp2
	s2, err := b.svc.Send(t.Context(), b.a.id, grouped)
	require.NoError(t, err)
	untraced, err := b.svc.Send(t.Context(), b.a.id, b.a.cmd("untraced"))
	require.NoError(t, err)
	retry := b.a.cmd("grouped")
	retry.Traceparent = tp1
	again, err := b.svc.Send(t.Context(), b.a.id, retry)
	require.NoError(t, err)
	require.True(t, again.Replayed)

	var got map[uuid.UUID]string
	require.NoError(t, db.InTenantTx(t.Context(), b.env.Pool, b.a.id, func(tx pgx.Tx) error {
		got, err = db.OutboxTraceparents(t.Context(), tx, b.a.id, []uuid.UUID{s1.ID, s2.ID, untraced.ID})
		return err
	}))
	require.Equal(t, map[uuid.UUID]string{s1.ID: tp1, s2.ID: tp2}, got)
}
