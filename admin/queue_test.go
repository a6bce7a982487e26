package admin_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/workers"
)

// TestQueueGaugesCountRiverJobs: mio_river_jobs{queue,state} shows River's
// queues as mio.queue_health does, available jobs counted per queue.
func TestQueueGaugesCountRiverJobs(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, err := workers.NewClient(env.Pool, workers.NewSet(), workers.Config{})
	require.NoError(t, err)
	for range 3 {
		_, err := client.Insert(ctx, jobs.DispatchArgs{TenantID: uuid.New(), OutboxID: uuid.New()}, nil)
		require.NoError(t, err)
	}
	var queue string
	require.NoError(t, env.Pool.QueryRow(ctx, `SELECT queue FROM mio.queue_health WHERE kind = 'river_queue' AND available = 3`).Scan(&queue))

	m := metrics.NewQueue(prometheus.NewRegistry())
	go admin.RunQueueGauges(ctx, env.Pool, m, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.RiverJobs.WithLabelValues(queue, "available")) == 3
	}, 10*time.Second, 10*time.Millisecond)
	require.Zero(t, testutil.ToFloat64(m.RiverJobs.WithLabelValues(queue, "running")))
}
