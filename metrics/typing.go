package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// NewTyping creates the typing-signal counter and registers it on reg:
// mio_typing_signals_total{channel_type, outcome} (outcome: sent,
// unsupported, throttled, failed). Registered already (a second server on
// the same registry), the existing counter is returned.
func NewTyping(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mio_typing_signals_total",
		Help: "Typing signals by channel and outcome: sent, unsupported, throttled, failed.",
	}, []string{"channel_type", "outcome"})
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}
