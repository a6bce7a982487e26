package db_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
)

// TestSendTx: a send transaction's lookups answer under their tenant (a
// used key, the accounts, the edited message); its Commit writes every
// column it is given — the batch's positional arguments follow dbsqlc's
// order — with the first event; a key already held fails the whole
// commit with ErrConflict and writes nothing; the transaction cannot be
// ended through Tx, and no connection is kept.
func TestSendTx(t *testing.T) {
	t.Parallel()
	b := newOutboxBundle(t)
	ctx := context.Background()
	prior := b.insert(t, "prior", "conv-1")
	other := newOutboxBundle(t) // another tenant: its rows are not seen

	st, found, err := db.BeginSendTx(ctx, b.env.Pool, []db.SendLookup{{TenantID: b.tenant, Keys: []string{"prior", "new"},
		AccountIDs: []uuid.UUID{b.account, other.account}, EditIDs: []uuid.UUID{prior, uuid.New()}}})
	require.NoError(t, err)
	defer st.Rollback()
	require.Len(t, found, 1)
	require.Len(t, found[0].Priors, 1)
	require.Equal(t, prior, found[0].Priors[0].ID)
	require.Len(t, found[0].Accounts, 1, "the other tenant's account is not seen")
	require.Equal(t, b.account, found[0].Accounts[0].ID)
	require.Len(t, found[0].Edited, 1)
	require.Equal(t, prior, found[0].Edited[0].ID)

	require.ErrorContains(t, st.Tx().Commit(ctx), "SendTx")
	require.ErrorContains(t, st.Tx().Rollback(ctx), "SendTx")
	_, err = st.Tx().Begin(ctx)
	require.Error(t, err)
	var tenant string
	require.NoError(t, st.Tx().QueryRow(ctx, "SELECT current_setting('app.current_tenant_id')").Scan(&tenant))
	require.Equal(t, b.tenant.String(), tenant, "Tx runs in the transaction")

	row := db.OutboxNew{ID: uuid.New(), AccountID: b.account, ChannelType: "webhook", ConversationID: "conv-1",
		ThreadID: "thread-1", IdempotencyKey: "new", RequestSHA256: bytes.Repeat([]byte{7}, 32), Text: "hello",
		RichContent: json.RawMessage(`{"blocks": [1]}`), Attachments: json.RawMessage(`[{"url": "u"}]`), EditOf: &prior, JobID: 4242}
	ins, err := st.Commit(ctx, []db.SendInsert{{TenantID: b.tenant, Rows: []db.OutboxNew{row}}})
	require.NoError(t, err)
	require.Len(t, ins, 1)
	require.Len(t, ins[0], 1)
	require.Equal(t, row.ID, ins[0][0].ID)
	st.Rollback() // a no-op once committed

	var got *db.Outbound
	var jobID int64
	var events []string
	b.tx(t, func(tx pgx.Tx) error {
		var err error
		if got, err = db.OutboxGet(ctx, tx, b.tenant, row.ID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT job_id FROM mio.outbox WHERE id = $1", row.ID).Scan(&jobID); err != nil {
			return err
		}
		evs, err := db.OutboxEventList(ctx, tx, b.tenant, row.ID)
		for _, e := range evs {
			events = append(events, e.Event+"/"+e.Machine+"/"+e.State)
		}
		return err
	})
	require.Equal(t, []any{b.tenant, b.account, "webhook", "conv-1", "thread-1", "new", row.RequestSHA256, "hello", prior, db.HandoffQueued},
		[]any{got.TenantID, got.AccountID, got.ChannelType, got.ConversationID, got.ThreadID, got.IdempotencyKey, got.RequestSHA256, got.Text, *got.EditOf, got.HandoffState})
	require.JSONEq(t, string(row.RichContent), string(got.RichContent))
	require.JSONEq(t, string(row.Attachments), string(got.Attachments))
	require.Equal(t, int64(4242), jobID)
	require.Equal(t, []string{"queued/handoff/queued"}, events)

	// A key held already: the commit fails whole.
	st, _, err = db.BeginSendTx(ctx, b.env.Pool, []db.SendLookup{{TenantID: b.tenant, Keys: []string{"fresh"}}})
	require.NoError(t, err)
	fresh := db.OutboxNew{ID: uuid.New(), AccountID: b.account, ChannelType: "webhook", ConversationID: "c", IdempotencyKey: "fresh", RequestSHA256: make([]byte, 32)}
	taken := fresh
	taken.ID, taken.IdempotencyKey = uuid.New(), "new"
	_, err = st.Commit(ctx, []db.SendInsert{{TenantID: b.tenant, Rows: []db.OutboxNew{fresh, taken}}})
	require.ErrorIs(t, err, db.ErrConflict)
	_, err = st.Commit(ctx, nil)
	require.Error(t, err, "a failed commit ends the transaction")
	b.tx(t, func(tx pgx.Tx) error {
		_, err := db.OutboxGetByKey(ctx, tx, b.tenant, "fresh")
		require.ErrorIs(t, err, db.ErrNotFound, "nothing of a failed commit is written")
		return nil
	})
	require.Zero(t, b.env.Pool.Stat().AcquiredConns(), "no connection kept")
}
