package workers

import (
	"math"

	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
)

// Bucket scopes (channels.ScopeAccount, channels.ScopeConversation).
const (
	scopeAccount      = channels.ScopeAccount
	scopeConversation = channels.ScopeConversation
)

// bucketSpec is one token bucket a send must take a token from.
type bucketSpec struct {
	Scope string
	Rate  float64 // tokens per second
	Burst float64
}

// defaultBuckets are the rate limits of each channel when the account
// sets none: the adapters' Info().RateLimits (reference/channels.md). A
// channel without any is unlimited.
func defaultBuckets(reg *channels.Registry) map[string][]bucketSpec {
	out := map[string][]bucketSpec{}
	for _, ct := range reg.Types() {
		ch, _ := reg.Get(ct)
		var specs []bucketSpec
		for _, rl := range ch.Info().RateLimits {
			specs = append(specs, bucketSpec{Scope: rl.Scope, Rate: rl.PerSec, Burst: rl.Burst})
		}
		out[ct] = specs
	}
	return out
}

// bucketsFor returns the buckets of an account's sends: the channel
// defaults (specs), with the account's rate_limit_per_sec / rate_limit_burst
// replacing (or adding) the account-wide bucket. A burst without a rate
// only resizes the default account bucket.
func bucketsFor(specs []bucketSpec, ratePerSec *float64, burst *int32) []bucketSpec {
	if ratePerSec == nil && burst == nil {
		return specs
	}
	out := make([]bucketSpec, 0, len(specs)+1)
	var acct *bucketSpec
	for _, s := range specs {
		if s.Scope == scopeAccount {
			s := s
			acct = &s
			continue
		}
		out = append(out, s)
	}
	if ratePerSec != nil {
		b := math.Max(1, math.Ceil(*ratePerSec))
		if acct != nil && acct.Rate == *ratePerSec {
			b = acct.Burst
		}
		acct = &bucketSpec{Scope: scopeAccount, Rate: *ratePerSec, Burst: b}
	}
	if acct == nil {
		return out // a burst alone on a channel without an account bucket
	}
	if burst != nil {
		acct.Burst = float64(*burst)
	}
	return append([]bucketSpec{*acct}, out...)
}

// bucketKey names a bucket in mio.rate_buckets.
func bucketKey(scope string, accountID uuid.UUID, conversationID string) string {
	if scope == scopeConversation {
		return "c:" + accountID.String() + ":" + conversationID
	}
	return "a:" + accountID.String()
}
