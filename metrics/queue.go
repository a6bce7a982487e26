package metrics

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Queue holds the families of queue health (docs/contract.md §8).
type Queue struct {
	// RiverJobs is the depth of River's queues:
	// mio_river_jobs{queue,state}, state one of available, running,
	// retryable. Queues are MIO's own (bounded).
	RiverJobs *prometheus.GaugeVec
}

// NewQueue registers the queue health families on reg.
func NewQueue(reg prometheus.Registerer) *Queue {
	q := &Queue{
		RiverJobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mio_river_jobs",
			Help: "River jobs by queue and state (available, running, retryable).",
		}, []string{"queue", "state"}),
	}
	reg.MustRegister(q.RiverJobs)
	return q
}

// OtherConsumers is the consumer label value the values of consumers past
// MaxConsumerLabels are summed under.
const OtherConsumers = "_other"

// MaxConsumerLabels bounds the consumer label's values: consumer names
// are chosen by tenants, so only the largest ones get their own series.
const MaxConsumerLabels = 50

// CapLabels bounds a per-consumer family's label values: the max largest
// values keep their name, the rest are summed under OtherConsumers. The
// consumer gauges (mio_consumer_lag, mio_consumer_ack_pending) go through
// it before they are set.
func CapLabels(values map[string]float64, max int) map[string]float64 {
	if len(values) <= max {
		return values
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(values[b], values[a]), cmp.Compare(a, b))
	})
	out := make(map[string]float64, max+1)
	for i, n := range names {
		if i < max {
			out[n] = values[n]
		} else {
			out[OtherConsumers] += values[n]
		}
	}
	return out
}
