package metrics

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of a credential renewal (mio_credential_renewals_total).
const (
	// RenewalRenewed: the platform issued a new access token.
	RenewalRenewed = "renewed"
	// RenewalRefused: the platform refused the grant for good; the
	// account was disabled.
	RenewalRefused = "refused"
	// RenewalFailed: the renewal failed and is tried again (5xx,
	// network, rate limited).
	RenewalFailed = "failed"
)

// Credentials holds the families of credential renewal (accounts whose
// platform tokens expire and are renewed from a grant).
type Credentials struct {
	// Renewals counts this process's token requests to platforms by
	// channel_type and outcome (renewed, refused, failed):
	// mio_credential_renewals_total. outcome="refused" counts grant
	// refusals, each of which disabled an account.
	Renewals *prometheus.CounterVec
}

// NewCredentials registers the families on reg (nil: not registered, for
// tests).
func NewCredentials(reg prometheus.Registerer) *Credentials {
	m := &Credentials{
		Renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mio_credential_renewals_total",
			Help: "Access token requests to platforms from account grants, by outcome: renewed, refused (the grant was refused and its account disabled), failed (retried).",
		}, []string{"channel_type", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.Renewals)
	}
	return m
}
