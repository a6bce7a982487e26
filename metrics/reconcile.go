package metrics

import "github.com/prometheus/client_golang/prometheus"

// Reconcile holds the metric families of the catch-up reconciler.
type Reconcile struct {
	// Recovered counts messages the reconciler stored from platform
	// history that no live intake had stored (mio_reconcile_recovered_total),
	// by channel_type.
	Recovered *prometheus.CounterVec
	// Calls counts history calls by channel_type and outcome (ok,
	// rate_limited, error).
	Calls *prometheus.CounterVec
}

// NewReconcile registers the reconciler's families on reg (nil: not
// registered, for tests).
func NewReconcile(reg prometheus.Registerer) *Reconcile {
	m := &Reconcile{
		Recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_reconcile_recovered_total",
			Help: "Messages recovered from platform history by the catch-up reconciler (gaps the live intake missed).",
		}, []string{"channel_type"}),
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_reconcile_history_calls_total",
			Help: "Platform history calls of the catch-up reconciler by outcome: ok, rate_limited, error.",
		}, []string{"channel_type", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.Recovered, m.Calls)
	}
	return m
}
