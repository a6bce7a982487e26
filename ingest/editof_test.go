package ingest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
)

// TestEditOfLinksStoredOriginal: an edit naming a stored original's
// platform id gets the original's MIO id and source_message_id in
// edit_of; one naming an unknown message, or the same id in another
// conversation, keeps the platform id alone.
func TestEditOfLinksStoredOriginal(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	tenant := b.tenants[0]
	in := ingest.New(b.env.Pool, ingest.Config{})
	in.Start()
	defer in.Stop()
	ctx := context.Background()
	store := func(source, conv string, m envelope.Message) uuid.UUID {
		t.Helper()
		row := b.row(tenant, source)
		row.ConversationID = conv
		row.PlatformMessageID = m.PlatformMessageID
		if m.EditOf != nil {
			row.EditOfPlatformID = m.EditOf.PlatformMessageID
			row.PlatformMessageID = ""
		}
		var err error
		row.Envelope, err = json.Marshal(&m)
		require.NoError(t, err)
		res, err := in.Ingest(ctx, &ingest.Request{TenantID: tenant, Messages: []db.InboxRow{row}})
		require.NoError(t, err)
		require.Len(t, res.Inserted, 1)
		return row.ID
	}
	editOf := func(id uuid.UUID) *envelope.EditRef {
		t.Helper()
		var m envelope.Message
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, tenant, func(tx pgx.Tx) error {
			row, err := db.InboxGet(ctx, tx, tenant, id)
			if err != nil {
				return err
			}
			return json.Unmarshal(row.Envelope, &m)
		}))
		return m.EditOf
	}

	orig := store("event-1", "C1", envelope.Message{Text: "first", PlatformMessageID: "1700.01"})
	edit := store("event-2", "C1", envelope.Message{Text: "first!", Edited: true, EditOf: envelope.NewEditRef("1700.01")})
	require.Equal(t, &envelope.EditRef{ID: &orig, SourceMessageID: "event-1", PlatformMessageID: "1700.01"}, editOf(edit))

	del := store("event-3", "C1", envelope.Message{Deleted: true, EditOf: envelope.NewEditRef("1700.01")})
	require.Equal(t, &orig, editOf(del).ID, "a delete links too")

	other := store("event-4", "C2", envelope.Message{Edited: true, EditOf: envelope.NewEditRef("1700.01")})
	require.Equal(t, envelope.NewEditRef("1700.01"), editOf(other), "another conversation's id is not this message")

	unknown := store("event-5", "C1", envelope.Message{Edited: true, EditOf: envelope.NewEditRef("1600.99")})
	require.Equal(t, envelope.NewEditRef("1600.99"), editOf(unknown), "an original MIO never stored: the platform id alone")
	require.Nil(t, editOf(orig))
}

// TestEditOfLinksOriginalInSameBatch: an edit committed in the same ingest
// batch (one statement) as its original links to it as well.
func TestEditOfLinksOriginalInSameBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	tenant := b.tenants[0]
	in := ingest.New(b.env.Pool, ingest.Config{})
	in.Start()
	defer in.Stop()
	ctx := context.Background()
	row := func(source string, m envelope.Message) db.InboxRow {
		r := b.row(tenant, source)
		r.ConversationID = "C1"
		r.PlatformMessageID = m.PlatformMessageID
		if m.EditOf != nil {
			r.EditOfPlatformID = m.EditOf.PlatformMessageID
		}
		var err error
		r.Envelope, err = json.Marshal(&m)
		require.NoError(t, err)
		return r
	}
	orig := row("1700.01", envelope.Message{Text: "first", PlatformMessageID: "1700.01"})
	edit := row("1700.01:edit", envelope.Message{Text: "first!", Edited: true, EditOf: envelope.NewEditRef("1700.01")})
	res, err := in.Ingest(ctx, &ingest.Request{TenantID: tenant, Messages: []db.InboxRow{orig, edit}})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 2)
	var m envelope.Message
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, tenant, func(tx pgx.Tx) error {
		stored, err := db.InboxGet(ctx, tx, tenant, edit.ID)
		if err != nil {
			return err
		}
		return json.Unmarshal(stored.Envelope, &m)
	}))
	require.Equal(t, &envelope.EditRef{ID: &orig.ID, SourceMessageID: "1700.01", PlatformMessageID: "1700.01"}, m.EditOf)
}
