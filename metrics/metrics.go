// Package metrics builds MIO's Prometheus registry and holds its metric
// families. There is no global registry: the process creates one Metrics
// and hands it to the HTTP layer and the workers. Labels are bounded enums
// only (channel_type, direction, outcome, status class, route pattern,
// operator-chosen consumer names) — never tenant, account, conversation or
// message ids.
//
// Internal to MIO; not a stable API.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics is the process's registry and metric families.
type Metrics struct {
	Registry *prometheus.Registry

	HTTPRequestDuration *prometheus.HistogramVec // route, method, code_class
	InboundLatency      *prometheus.HistogramVec // channel_type, outcome
	DedupTotal          *prometheus.CounterVec   // channel_type
	InboundMessages     *prometheus.CounterVec   // channel_type
	IngestBatchSize     prometheus.Histogram
	OutboundBatchSize   prometheus.Histogram
	AppendBatchSize     prometheus.Histogram
	// IngestCommitSeconds, OutboundCommitSeconds and AppendCommitSeconds
	// time one group commit's transaction.
	IngestCommitSeconds   prometheus.Histogram
	OutboundCommitSeconds prometheus.Histogram
	AppendCommitSeconds   prometheus.Histogram

	ConsumerLag        *prometheus.GaugeVec   // consumer
	ConsumerAckPending *prometheus.GaugeVec   // consumer
	ConsumerDeliveries *prometheus.CounterVec // outcome
	PullLatency        prometheus.Histogram
}

// New registers every family on a fresh registry, with the Go runtime and
// process collectors.
func New() *Metrics {
	// Group-commit durations, 0.5 ms to 1 s.
	commitBuckets := []float64{.0005, .001, .002, .004, .008, .016, .032, .064, .128, .256, .512, 1}
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: r,
		HTTPRequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mio_http_request_duration_seconds",
			Help:    "HTTP requests by route pattern, method and status class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method", "code_class"}),
		InboundLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mio_gateway_inbound_latency_seconds",
			Help:    "Webhook handling time from first byte to answer, by channel and outcome.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"channel_type", "outcome"}),
		DedupTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_idempotency_dedup_total",
			Help: "Inbound events dropped as platform redeliveries of an already stored event.",
		}, []string{"channel_type"}),
		InboundMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_inbound_messages_total",
			Help: "Inbound messages committed, by channel.",
		}, []string{"channel_type"}),
		IngestBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_ingest_batch_requests",
			Help:    "Webhook requests committed together in one group-commit transaction.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
		}),
		OutboundBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_outbound_batch_requests",
			Help:    "POST /v1/outbound requests committed together in one group-commit transaction.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
		}),
		AppendBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_append_batch_requests",
			Help:    "POST /v1/outbound/{id}/append requests committed together in one group-commit transaction.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
		}),
		IngestCommitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_ingest_commit_seconds",
			Help:    "Duration of one group-commit transaction of webhooks: its statements and its commit.",
			Buckets: commitBuckets,
		}),
		OutboundCommitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_outbound_commit_seconds",
			Help:    "Duration of one group-commit transaction of POST /v1/outbound requests: its statements and its commit.",
			Buckets: commitBuckets,
		}),
		AppendCommitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_append_commit_seconds",
			Help:    "Duration of one group-commit transaction of POST /v1/outbound/{id}/append requests: its statements and its commit.",
			Buckets: commitBuckets,
		}),
		ConsumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mio_consumer_lag",
			Help: "Messages waiting for a consumer: not yet taken from its stream, or waiting to be redelivered (pending in mio.queue_health, exact), summed over tenants. Leased ones are mio_consumer_ack_pending.",
		}, []string{"consumer"}),
		ConsumerAckPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mio_consumer_ack_pending",
			Help: "Leased, unacknowledged deliveries per consumer, summed over tenants.",
		}, []string{"consumer"}),
		ConsumerDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_consumer_deliveries_total",
			Help: "Consumer delivery events by outcome: delivered, redelivered, acked, naked, termed, extended, dead.",
		}, []string{"outcome"}),
		PullLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_consumer_pull_duration_seconds",
			Help:    "Pull request handling time, long-poll wait included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 15, 30, 60},
		}),
	}
	r.MustRegister(m.HTTPRequestDuration, m.InboundLatency, m.DedupTotal, m.InboundMessages, m.IngestBatchSize, m.OutboundBatchSize,
		m.AppendBatchSize, m.IngestCommitSeconds, m.OutboundCommitSeconds, m.AppendCommitSeconds,
		m.ConsumerLag, m.ConsumerAckPending, m.ConsumerDeliveries, m.PullLatency)
	return m
}
