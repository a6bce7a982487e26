package consume_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
)

// TestEnsureNeverOverwrites: Ensure creates a consumer that does not
// exist, and returns one that does unchanged — a consumer an operator
// configured (PUT) before an agent's first pull keeps its settings.
func TestEnsureNeverOverwrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	svc := consume.New(b.env.Pool, nil, nil, nil, consume.Options{})

	info, created, err := svc.Ensure(ctx, b.tenant, "fresh", consume.Config{DeliverPolicy: "new", Ordering: "conversation"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "conversation", info.Consumer.Ordering)

	_, _, err = svc.Put(ctx, b.tenant, "configured", consume.Config{DeliverPolicy: "all", Ordering: "none", AckWait: 2 * time.Minute})
	require.NoError(t, err)
	info, created, err = svc.Ensure(ctx, b.tenant, "configured", consume.Config{DeliverPolicy: "new", Ordering: "conversation"})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "none", info.Consumer.Ordering, "the configured consumer is returned as it is")
	require.Equal(t, "all", info.Consumer.DeliverPolicy)
	require.Equal(t, 2*time.Minute, info.Consumer.AckWait)
}

// TestCreateLeavesExisting: Create creates a consumer that does not exist
// and refuses, with ErrExists and nothing changed, one that does.
func TestCreateLeavesExisting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	svc := consume.New(b.env.Pool, nil, nil, nil, consume.Options{})

	info, err := svc.Create(ctx, b.tenant, "fresh", consume.Config{DeliverPolicy: "new", Ordering: "conversation"})
	require.NoError(t, err)
	require.Equal(t, "conversation", info.Consumer.Ordering)
	_, err = svc.Create(ctx, b.tenant, "fresh", consume.Config{DeliverPolicy: "new", Ordering: "none", AckWait: time.Hour})
	require.ErrorIs(t, err, consume.ErrExists)
	info, err = svc.Get(ctx, b.tenant, "fresh")
	require.NoError(t, err)
	require.Equal(t, "conversation", info.Consumer.Ordering)
	require.Equal(t, 30*time.Second, info.Consumer.AckWait)
}

// TestPutCreatedMeanwhile: a Put that found no consumer, while another
// transaction was creating it, treats it as the update it becomes: the
// settings fixed at creation are checked against the consumer that is
// there (a different deliver_policy is refused, not silently dropped).
func TestPutCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	svc := consume.New(b.env.Pool, nil, nil, nil, consume.Options{})

	// Another transaction creates the consumer and holds its row.
	tx, err := db.BeginTenant(ctx, b.env.Pool, b.tenant)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, created, err := db.ConsumerUpsert(ctx, tx, &db.Consumer{TenantID: b.tenant, Name: "raced", DeliverPolicy: "new",
		AckWait: 30 * time.Second, MaxDeliver: 5, MaxAckPending: 1000, Ordering: "conversation", Stage: db.StageReady})
	require.NoError(t, err)
	require.True(t, created)

	// Put reads no consumer and waits on the row (seen by the schema's
	// owner: the runtime role sees no other session's query); then the
	// creator commits.
	owner := b.env.OwnerPool(t)
	done := make(chan error, 1)
	go func() {
		_, _, err := svc.Put(ctx, b.tenant, "raced", consume.Config{DeliverPolicy: "all", Ordering: "none"})
		done <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, owner.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO mio.consumers%'`).Scan(&n))
		return n > 0
	}, 10*time.Second, 10*time.Millisecond, "Put never waited on the creator's row")
	require.NoError(t, tx.Commit(ctx))

	var ve *consume.ValidationError
	require.ErrorAs(t, <-done, &ve, "deliver_policy all on a consumer created with new")
	info, err := svc.Get(ctx, b.tenant, "raced")
	require.NoError(t, err)
	require.Equal(t, "new", info.Consumer.DeliverPolicy)
	require.Equal(t, "conversation", info.Consumer.Ordering)
}
