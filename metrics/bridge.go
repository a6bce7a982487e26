package metrics

import "github.com/prometheus/client_golang/prometheus"

// Bridge holds the metric families of the NATS bridge. Labels: direction
// (inbound, inbound_enriched, outbound) and outcome only.
type Bridge struct {
	// Published counts events by direction and outcome: published (a new
	// stream message), duplicate (dropped by JetStream's duplicate window)
	// or error (not acknowledged; republished later).
	Published *prometheus.CounterVec
	// LagSeconds is, per direction, how long ago the last published event
	// entered MIO's log (commit → JetStream ack, as seen by the bridge).
	LagSeconds *prometheus.GaugeVec
	// LagEvents is, per direction, how many events the last read returned
	// (the batch size while catching up, near 0 when idle).
	LagEvents *prometheus.GaugeVec
	// PublishLatency is the time from an async publish to its ack.
	PublishLatency prometheus.Histogram
	// PendingAcks is the number of publishes awaiting their ack.
	PendingAcks prometheus.Gauge
}

// NewBridge registers the bridge families on reg (nil: not registered,
// for tests).
func NewBridge(reg prometheus.Registerer) *Bridge {
	m := &Bridge{
		Published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_bridge_published_total",
			Help: "Events the NATS bridge published, by direction and outcome (published, duplicate, error).",
		}, []string{"direction", "outcome"}),
		LagSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mio_bridge_lag_seconds",
			Help: "Age of the last event the NATS bridge published when its ack came, by direction.",
		}, []string{"direction"}),
		LagEvents: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mio_bridge_lag_events",
			Help: "Events returned by the NATS bridge's last read of the log, by direction.",
		}, []string{"direction"}),
		PublishLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_bridge_publish_latency_seconds",
			Help:    "Time from a JetStream async publish to its ack.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5},
		}),
		PendingAcks: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mio_bridge_pending_acks",
			Help: "JetStream publishes of the NATS bridge awaiting their ack.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Published, m.LagSeconds, m.LagEvents, m.PublishLatency, m.PendingAcks)
	}
	return m
}
