package workers

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/jobs"
)

// TestRetryPolicy: one policy decides a row's next attempt, its
// dead-letter point (the account's own, else MaxAttempts), a platform's
// Retry-After, and a dispatch job's next run, whose River attempts are
// the same budget (no River budget of 25 under the row's 5).
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Base: 100 * time.Millisecond, Max: time.Second}.withDefaults()
	require.Equal(t, jobs.DispatchMaxAttempts, p.MaxAttempts)
	require.Equal(t, jobs.DispatchMaxAttempts, (jobs.DispatchArgs{}).InsertOpts().MaxAttempts)

	for k := 1; k < p.MaxAttempts; k++ {
		dead, maxAttempts, delay := p.Next(k, nil)
		require.False(t, dead, "attempt %d", k)
		require.Equal(t, p.MaxAttempts, maxAttempts)
		require.LessOrEqual(t, delay, min(time.Second, 100*time.Millisecond<<(k-1)))
	}
	dead, _, _ := p.Next(p.MaxAttempts, nil)
	require.True(t, dead)
	two := int32(2)
	dead, maxAttempts, _ := p.Next(2, &two)
	require.True(t, dead, "the account's own attempts")
	require.Equal(t, 2, maxAttempts)

	require.Equal(t, 10*time.Millisecond, p.RetryAfter(0))
	require.Equal(t, 3*time.Second, p.RetryAfter(3*time.Second))

	before := time.Now()
	next := p.NextRetry(&rivertype.JobRow{Errors: []rivertype.AttemptError{{}, {}, {}}})
	require.False(t, next.Before(before))
	require.LessOrEqual(t, next.Sub(before), 400*time.Millisecond+50*time.Millisecond, "the backoff of three failures")
	rescued := p.NextRetry(&rivertype.JobRow{})
	require.LessOrEqual(t, rescued.Sub(before), 100*time.Millisecond+50*time.Millisecond)
}
