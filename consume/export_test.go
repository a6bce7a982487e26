package consume

import "context"

// RefreshGauges runs one refresh of the consumer gauges (RunGauges' body).
func (s *Service) RefreshGauges(ctx context.Context) error { return s.refreshGauges(ctx) }
