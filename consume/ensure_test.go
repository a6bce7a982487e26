package consume_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/consume"
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
