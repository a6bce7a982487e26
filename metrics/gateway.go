package metrics

import "github.com/prometheus/client_golang/prometheus"

// Gateway holds the metric families of the platform connections MIO
// holds itself (the Discord Gateway).
type Gateway struct {
	// Sessions is the number of sessions this process holds
	// (mio_discord_gateway_sessions).
	Sessions prometheus.Gauge
	// Reconnects counts connection ends followed by a reconnect, by
	// reason: zombie (no heartbeat ACK), requested (op 7), invalid_session,
	// dropped (network, close frames).
	Reconnects *prometheus.CounterVec
}

// NewGateway registers the gateway families on reg (nil: not registered,
// for tests).
func NewGateway(reg prometheus.Registerer) *Gateway {
	m := &Gateway{
		Sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mio_discord_gateway_sessions",
			Help: "Discord Gateway sessions held by this process (one per account across all processes).",
		}),
		Reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_discord_gateway_reconnects_total",
			Help: "Discord Gateway connections ended and reconnected, by reason: zombie, requested, invalid_session, dropped.",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.Sessions, m.Reconnects)
	}
	return m
}
