package metrics

import "github.com/prometheus/client_golang/prometheus"

// Outbound label values.
const (
	// DirectionOutbound is the direction label of every outbound family.
	DirectionOutbound = "outbound"

	// Outcomes of one provider call (mio_gateway_outbound_send_total).
	OutcomeSuccess        = "success"
	OutcomeRateLimited    = "rate_limited"
	OutcomeTransientError = "transient_error"
	OutcomePermanentError = "permanent_error"

	// Sources of a rate-limit wait.
	RateLimitBucket   = "bucket"   // MIO's own token bucket
	RateLimitProvider = "provider" // the platform answered 429
)

// Outbound holds the families of the reply path: provider calls by
// outcome, their latency, queue-to-handoff latency, rate-limit waits and
// dead letters. Labels: channel_type, direction, outcome, source — never
// tenant, account, conversation or message ids.
type Outbound struct {
	// SendTotal counts provider calls (sends and edits):
	// mio_gateway_outbound_send_total{channel_type,direction,outcome}.
	SendTotal *prometheus.CounterVec
	// SendLatency is the duration of one provider call.
	SendLatency *prometheus.HistogramVec // channel_type, outcome
	// HandoffLatency is the time from acceptance (POST /v1/outbound) to
	// hand-off, waits and retries included.
	HandoffLatency *prometheus.HistogramVec // channel_type
	// RateLimitWaits observes each wait imposed by a rate limit, seconds.
	RateLimitWaits *prometheus.HistogramVec // channel_type, source
	// DeadLetters counts messages that became dead letters.
	DeadLetters *prometheus.CounterVec // channel_type
	// Receipts counts delivery receipts applied, by resulting provider
	// state (bounded: the provider states).
	Receipts *prometheus.CounterVec // channel_type, outcome
	// StreamsOpen is the streamed replies this process is rendering.
	StreamsOpen *prometheus.GaugeVec // channel_type
	// StreamConnWaits observes how long each database call of an open
	// stream waited for one of the process's stream connection slots.
	StreamConnWaits prometheus.Histogram
}

// NewOutbound creates the outbound families and registers them on reg.
func NewOutbound(reg prometheus.Registerer) *Outbound {
	m := &Outbound{
		SendTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_gateway_outbound_send_total",
			Help: "Outbound provider calls (sends and edits) by channel and outcome: success, rate_limited, transient_error, permanent_error.",
		}, []string{"channel_type", "direction", "outcome"}),
		SendLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mio_outbound_send_duration_seconds",
			Help:    "Duration of one outbound provider call, by channel and outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"channel_type", "outcome"}),
		HandoffLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mio_outbound_handoff_latency_seconds",
			Help:    "Time from acceptance of an outbound message to its hand-off to the platform (waits and retries included).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"channel_type"}),
		RateLimitWaits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mio_outbound_rate_limit_wait_seconds",
			Help:    "Waits imposed on outbound sends by rate limits: MIO's shared token buckets (source=bucket) or the platform's 429 (source=provider).",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 600},
		}, []string{"channel_type", "source"}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_outbound_dead_letters_total",
			Help: "Outbound messages that became dead letters (permanent error or attempts exhausted), by channel.",
		}, []string{"channel_type"}),
		Receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_outbound_receipts_total",
			Help: "Delivery receipts and receipt time-outs that moved an outbound message's provider state, by channel and new state.",
		}, []string{"channel_type", "outcome"}),
		StreamsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mio_outbound_streams_open",
			Help: "Streamed replies this process is rendering (sending and editing until they finish), by channel.",
		}, []string{"channel_type"}),
		StreamConnWaits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mio_outbound_stream_conn_wait_seconds",
			Help:    "How long a database call of an open stream (a look, a token take) waited for one of the process's stream connection slots (a quarter of the pool).",
			Buckets: []float64{.0001, .001, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
	}
	reg.MustRegister(m.SendTotal, m.SendLatency, m.HandoffLatency, m.RateLimitWaits, m.DeadLetters, m.Receipts,
		m.StreamsOpen, m.StreamConnWaits)
	return m
}
