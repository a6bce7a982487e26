package channels

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Sentinel errors adapters wrap.
var (
	// ErrUnauthorized: the request's signature or token is missing, wrong
	// or stale.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrUnsupportedMediaType: the request body has a content type the
	// adapter does not accept.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	// ErrInvalidConfig: the account's settings or credentials do not form a
	// valid adapter configuration.
	ErrInvalidConfig = errors.New("invalid channel configuration")
)

// BadRequestError reports a malformed webhook body or a missing required
// field. Reason is safe to show to the caller.
type BadRequestError struct {
	Reason string
}

func (e *BadRequestError) Error() string { return "bad request: " + e.Reason }

// BadRequestf returns a *BadRequestError with a formatted reason.
func BadRequestf(format string, args ...any) error {
	return &BadRequestError{Reason: fmt.Sprintf(format, args...)}
}

// Unauthorizedf returns an error wrapping ErrUnauthorized with a reason.
func Unauthorizedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnauthorized, fmt.Sprintf(format, args...))
}

// RateLimitedError is a platform's "slow down": retry after RetryAfter,
// without counting an attempt.
type RateLimitedError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited (retry after %s): %v", e.RetryAfter, e.Err)
}
func (e *RateLimitedError) Unwrap() error { return e.Err }

// TransientError is a failure worth retrying with backoff (5xx, timeout,
// network).
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return "transient: " + e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// PermanentError is a failure that retrying cannot fix (most 4xx).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// TransportError turns a failed HTTP exchange with a platform into a
// *TransientError prefixed with op ("slack: chat.postMessage"). The
// request URL is dropped from *url.Error (it can hold a bot token); when
// ctx itself ended, its error is reported instead.
func TransportError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &TransientError{Err: fmt.Errorf("%s: %w", op, ctxErr)}
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return &TransientError{Err: fmt.Errorf("%s: %w", op, err)}
}
