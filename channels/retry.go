package channels

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps the wait a platform may ask for.
const MaxRetryAfter = 24 * time.Hour

// ParseRetryAfter reads a Retry-After value — seconds (fractions allowed)
// or an HTTP date — relative to now, capped at MaxRetryAfter. ok is false
// when the value is empty or malformed.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return RetryAfterSeconds(secs)
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), MaxRetryAfter), true
}

// RetryAfterSeconds converts a wait a platform gives in seconds (a JSON
// retry_after, fractions allowed), capped at MaxRetryAfter. ok is false
// for a negative or NaN value.
func RetryAfterSeconds(secs float64) (d time.Duration, ok bool) {
	if math.IsNaN(secs) || secs < 0 {
		return 0, false
	}
	if secs >= MaxRetryAfter.Seconds() {
		return MaxRetryAfter, true
	}
	return time.Duration(secs * float64(time.Second)), true
}

// RetryAfter reads header's Retry-After relative to now (ParseRetryAfter),
// or def when it is absent or malformed.
func RetryAfter(header http.Header, now time.Time, def time.Duration) time.Duration {
	if d, ok := ParseRetryAfter(header.Get("Retry-After"), now); ok {
		return d
	}
	return def
}
