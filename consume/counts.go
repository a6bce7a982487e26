package consume

import (
	"context"
	"time"

	"github.com/miohq/mio/db"
)

// RunCountsFold folds the streams' count deltas (db.StreamCountsFold) every
// interval until ctx is done, so that every pending count sums a few rows
// per key: between folds each ingest commit adds a row per key it wrote
// (docs/architecture.md, "Exact backlog"). Folds of several processes may
// overlap: each row is folded once.
func (s *Service) RunCountsFold(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := db.StreamCountsFold(ctx, s.pool); err != nil && ctx.Err() == nil {
			s.log.Warn("stream counts fold", "err", err)
		}
	}
}
