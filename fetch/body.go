package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// limitedBody passes through at most left bytes and fails with ErrTooLarge
// as soon as the stream proves longer, without reading more than one byte
// past the limit.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		if err != nil {
			b.err = err
		}
		return n, err
	}
	n = int(b.left)
	b.left = 0
	b.err = fmt.Errorf("fetch: body: %w", ErrTooLarge)
	return n, b.err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// wholeBody ends with io.EOF only when the whole body arrived: the
// transport reported its end while the request's context was still live,
// and with as many bytes as a declared Content-Length. net/http alone does
// not ensure that: a server can finish a chunked body after the request's
// deadline has fired, in the moment before the connection is closed (the
// TLS close_notify the client sends on cancelling is such a moment), and
// the transport then reports a clean io.EOF for the bytes that came before
// the deadline. Every other end is an error wrapping ErrIncomplete.
// Closing the body releases the request's context.
type wholeBody struct {
	rc      io.ReadCloser
	ctx     context.Context
	cancel  context.CancelFunc
	host    string
	timeout time.Duration
	want    int64 // declared Content-Length, -1 when unknown
	got     int64
	err     error
}

func (b *wholeBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.got += int64(n)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, io.EOF) && b.ctx.Err() == nil && (b.want < 0 || b.got == b.want):
		b.err = io.EOF
	default:
		b.err = b.incomplete(err)
	}
	return n, b.err
}

// incomplete names why the body ended early; err is what the transport
// reported.
func (b *wholeBody) incomplete(err error) error {
	cause := context.Cause(b.ctx)
	switch {
	case errors.Is(cause, ErrTimeout):
		return fmt.Errorf("fetch: body from %s: %w: %w after %s, %d bytes read", b.host, ErrIncomplete, ErrTimeout, b.timeout, b.got)
	case cause != nil:
		return fmt.Errorf("fetch: body from %s: %w after %d bytes: %w", b.host, ErrIncomplete, b.got, cause)
	case b.want >= 0 && b.got != b.want:
		return fmt.Errorf("fetch: body from %s: %w: %d of %d bytes (Content-Length): %w", b.host, ErrIncomplete, b.got, b.want, err)
	}
	return fmt.Errorf("fetch: body from %s: %w after %d bytes: %w", b.host, ErrIncomplete, b.got, err)
}

func (b *wholeBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}
