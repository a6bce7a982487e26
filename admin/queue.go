package admin

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
)

// QueueHealth returns mio.queue_health: the consumers of tenantID (every
// tenant when uuid.Nil) and every River queue.
func (s *Service) QueueHealth(ctx context.Context, tenantID uuid.UUID) ([]*db.QueueHealth, error) {
	tenants, err := s.tenantsOrOne(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := []*db.QueueHealth{}
	var queues []*db.QueueHealth
	for _, t := range tenants {
		err := db.InTenantTx(ctx, s.pool, t, func(tx pgx.Tx) error {
			rows, err := db.QueueHealthList(ctx, tx)
			for _, h := range rows {
				if h.Kind == "consumer" && h.TenantID != nil && *h.TenantID == t {
					out = append(out, h)
				}
			}
			if queues == nil {
				for _, h := range rows {
					if h.Kind != "consumer" {
						queues = append(queues, h)
					}
				}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if len(tenants) == 0 {
		rows, err := db.QueueHealthList(ctx, s.pool)
		if err != nil {
			return nil, err
		}
		for _, h := range rows {
			if h.Kind != "consumer" {
				queues = append(queues, h)
			}
		}
	}
	return append(out, queues...), nil
}

// RunQueueGauges refreshes mio_river_jobs from mio.river_queue_depth() every
// interval until ctx is done.
func RunQueueGauges(ctx context.Context, pool db.DBTX, m *metrics.Queue, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := refreshQueueGauges(ctx, pool, m); err != nil && ctx.Err() == nil {
			log.Warn("queue gauges", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func refreshQueueGauges(ctx context.Context, pool db.DBTX, m *metrics.Queue) error {
	rows, err := db.RiverQueueDepthList(ctx, pool)
	if err != nil {
		return err
	}
	m.RiverJobs.Reset()
	for _, h := range rows {
		for state, v := range map[string]*int64{"available": h.Available, "running": h.Running, "retryable": h.Retryable} {
			if v != nil {
				m.RiverJobs.WithLabelValues(*h.Queue, state).Set(float64(*v))
			}
		}
	}
	return nil
}
