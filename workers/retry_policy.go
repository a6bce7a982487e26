package workers

import (
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/miohq/mio/jobs"
)

// RetryPolicy decides, in one place, when a send is tried again and when
// it is a dead letter, for both layers of a send:
//   - the outbox row: an attempt that failed transiently waits Backoff
//     before the next (its next_attempt_at), a platform's Retry-After is
//     kept for the same attempt (RetryAfter), and the series ends dead at
//     MaxAttempts (Next);
//   - the River dispatch job: a run that failed before it could record an
//     attempt (the database out of reach) or that River's rescuer took
//     back from a killed worker runs again after the same Backoff
//     (NextRetry, the worker's retry policy), at most
//     jobs.DispatchMaxAttempts times; a row whose job River discarded is
//     given a new one by the outbox sweeper.
//
// The job's attempts are not a second budget of sends under the row's:
// provider failures are recorded on the row and end the run successfully.
type RetryPolicy struct {
	// Base and Max shape the full-jitter exponential backoff: the wait
	// after failure k is uniformly random in [0, min(Max, Base·2^(k-1))].
	// Defaults 1s and 5m.
	Base, Max time.Duration
	// MaxAttempts of an attempt series unless the account sets its own.
	// Default jobs.DispatchMaxAttempts.
	MaxAttempts int
}

// withDefaults returns p with its defaults applied.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Base <= 0 {
		p.Base = time.Second
	}
	if p.Max <= 0 {
		p.Max = 5 * time.Minute
	}
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = jobs.DispatchMaxAttempts
	}
	return p
}

// Backoff is the full-jitter delay after failure k (k ≥ 1) of a series,
// at least 1 ms.
func (p RetryPolicy) Backoff(k int) time.Duration {
	ceiling := p.Max
	if k-1 < 30 {
		if c := p.Base << max(k-1, 0); c > 0 && c < ceiling {
			ceiling = c
		}
	}
	return max(time.Millisecond, time.Duration(rand.Int64N(int64(ceiling)+1)))
}

// Next decides after the transient failure of attempt inSeries (counted
// from 1 within its series) whether the row is dead (its attempts used
// up: accountMax when the account sets one, else MaxAttempts), and if
// not, how long it waits before the next attempt.
func (p RetryPolicy) Next(inSeries int, accountMax *int32) (dead bool, maxAttempts int, delay time.Duration) {
	maxAttempts = p.MaxAttempts
	if accountMax != nil {
		maxAttempts = int(*accountMax)
	}
	if inSeries >= maxAttempts {
		return true, maxAttempts, 0
	}
	return false, maxAttempts, p.Backoff(inSeries)
}

// RetryAfter is how long the same attempt waits after a platform's 429:
// its Retry-After, at least 10 ms.
func (p RetryPolicy) RetryAfter(retryAfter time.Duration) time.Duration {
	return max(retryAfter, 10*time.Millisecond)
}

// NextRetry is when a failed run of job runs again: after the backoff of
// its errors so far (a rescue by River's rescuer counts as one). It makes
// RetryPolicy a river.ClientRetryPolicy.
func (p RetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(p.Backoff(max(len(job.Errors), 1)))
}
