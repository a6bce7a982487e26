package consume

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
)

// RunGauges refreshes mio_consumer_lag (pending, exactly as
// mio.queue_health counts it) and mio_consumer_ack_pending every interval
// until ctx is done. Consumer names are chosen by tenants: the
// same name in several tenants is summed (no tenant label), and only the
// metrics.MaxConsumerLabels largest keep their name, the rest summed under
// one label (metrics.CapLabels), so the series stay bounded.
func (s *Service) RunGauges(ctx context.Context, interval time.Duration) {
	if s.metrics == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.refreshGauges(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("consumer gauges", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Service) refreshGauges(ctx context.Context) error {
	tenants, err := db.TenantList(ctx, s.pool)
	if err != nil {
		return err
	}
	lag := map[string]float64{}
	pending := map[string]float64{}
	for _, t := range tenants {
		err := db.InTenantTx(ctx, s.pool, t.ID, func(tx pgx.Tx) error {
			cs, err := db.ConsumerList(ctx, tx, t.ID)
			if err != nil || len(cs) == 0 {
				return err
			}
			names := make([]string, len(cs))
			for i, c := range cs {
				names[i] = c.Name
			}
			stats, err := db.ConsumerHealthMany(ctx, tx, t.ID, names)
			if err != nil {
				return err
			}
			for name, st := range stats {
				lag[name] += float64(st.Pending)
				pending[name] += float64(st.AckPending)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	s.metrics.ConsumerLag.Reset()
	s.metrics.ConsumerAckPending.Reset()
	for name, v := range metrics.CapLabels(lag, metrics.MaxConsumerLabels) {
		s.metrics.ConsumerLag.WithLabelValues(name).Set(v)
	}
	for name, v := range metrics.CapLabels(pending, metrics.MaxConsumerLabels) {
		s.metrics.ConsumerAckPending.WithLabelValues(name).Set(v)
	}
	return nil
}
