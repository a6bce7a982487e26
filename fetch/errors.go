package fetch

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Sentinel errors; Get's errors wrap them.
var (
	// ErrForbiddenAddress: the host resolved to (or is) an address the
	// policy refuses; nothing was sent to it.
	ErrForbiddenAddress = errors.New("forbidden address")
	// ErrForbiddenHost: the host is not in Policy.AllowedHosts.
	ErrForbiddenHost = errors.New("forbidden host")
	// ErrForbiddenScheme: not https (or http with Policy.AllowHTTP).
	ErrForbiddenScheme = errors.New("forbidden scheme")
	// ErrIncomplete: the body ended before all of it arrived: cut by
	// Policy.Timeout (then the error wraps ErrTimeout too) or by the
	// caller's context, a connection reset, or fewer bytes than the
	// declared Content-Length. Retrying may succeed.
	ErrIncomplete = errors.New("incomplete body")
	// ErrTooLarge: the body is longer than Policy.MaxBytes.
	ErrTooLarge = errors.New("response too large")
	// ErrTooManyRedirects: more than Policy.MaxRedirects redirects.
	ErrTooManyRedirects = errors.New("too many redirects")
)

// ErrTimeout: Policy.Timeout passed before the response was complete,
// headers or body. It is a net.Error whose Timeout() is true.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "timed out" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// StatusError is a non-2xx answer.
type StatusError struct {
	Code int
	// Retryable is true for 429 and 5xx.
	Retryable bool
	// RetryAfter is the server's Retry-After (seconds or HTTP date), 0 when
	// absent or unparsable.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
}

func newStatusError(resp *http.Response, now time.Time) *StatusError {
	return &StatusError{
		Code:       resp.StatusCode,
		Retryable:  resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), now),
	}
}

func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
