package channels

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The cases the six adapters tested on their own, together.
func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		in     string
		want   time.Duration
		wantOK bool
	}{
		{name: "empty", in: ""},
		{name: "blank", in: "  "},
		{name: "seconds", in: "30", want: 30 * time.Second, wantOK: true},
		{name: "seconds with spaces", in: " 6 ", want: 6 * time.Second, wantOK: true},
		{name: "ten minutes", in: "600", want: 10 * time.Minute, wantOK: true},
		{name: "zero", in: "0", want: 0, wantOK: true},
		{name: "fractional", in: "1.5", want: 1500 * time.Millisecond, wantOK: true},
		{name: "float seconds", in: "0.25", want: 250 * time.Millisecond, wantOK: true},
		{name: "negative", in: "-1"},
		{name: "negative integer", in: "-3"},
		{name: "NaN", in: "NaN"},
		{name: "huge is capped", in: "99999999999", want: MaxRetryAfter, wantOK: true},
		{name: "exponent is capped", in: "1e12", want: MaxRetryAfter, wantOK: true},
		{name: "HTTP-date", in: now.Add(2 * time.Minute).Format(http.TimeFormat), want: 2 * time.Minute, wantOK: true},
		{name: "HTTP-date in the past", in: now.Add(-time.Minute).Format(http.TimeFormat), want: 0, wantOK: true},
		{name: "HTTP-date far ahead is capped", in: now.Add(48 * time.Hour).Format(http.TimeFormat), want: MaxRetryAfter, wantOK: true},
		{name: "garbage", in: "soon"},
		{name: "other garbage", in: "later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseRetryAfter(tt.in, now)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in     float64
		want   time.Duration
		wantOK bool
	}{
		{in: 0, want: 0, wantOK: true},
		{in: 0.657, want: 657 * time.Millisecond, wantOK: true},
		{in: 12.5, want: 12500 * time.Millisecond, wantOK: true},
		{in: 1e300, want: MaxRetryAfter, wantOK: true},
		{in: math.Inf(1), want: MaxRetryAfter, wantOK: true},
		{in: -0.5},
		{in: math.NaN()},
	} {
		got, ok := RetryAfterSeconds(tt.in)
		require.Equal(t, tt.wantOK, ok, "%v", tt.in)
		require.Equal(t, tt.want, got, "%v", tt.in)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Now()
	require.Equal(t, 7*time.Second, RetryAfter(http.Header{"Retry-After": {"7"}}, now, time.Minute))
	require.Equal(t, time.Minute, RetryAfter(http.Header{"Retry-After": {"soon"}}, now, time.Minute))
	require.Equal(t, time.Minute, RetryAfter(http.Header{}, now, time.Minute))
}
