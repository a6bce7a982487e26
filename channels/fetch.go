package channels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

// FetchedAttachment is an attachment's bytes as the platform serves them.
// The caller streams Body and closes it.
type FetchedAttachment struct {
	Body io.ReadCloser
	// ContentType is the platform's Content-Type ("" when none).
	ContentType string
	// Size is the declared length in bytes, -1 when unknown.
	Size int64
}

// AttachmentFetcher is implemented by channels that can download their
// attachments (an optional ability, checked with a type assertion).
//
// Fetch resolves att.Source (a URL, or a platform reference such as a
// Telegram file_id or a WhatsApp media id) with acct's credentials and
// opens the bytes. Every request goes through client, which enforces the
// channel's host allow-list, HTTPS, the address (SSRF) checks, the size
// cap and the timeout. Errors are *PermanentError when retrying cannot
// help (missing credentials, a file over the platform's limit, most 4xx),
// else transient; FetchError classifies client errors the same way.
type AttachmentFetcher interface {
	Fetch(ctx context.Context, acct Account, att envelope.Attachment, client *fetch.Client) (*FetchedAttachment, error)
	// FetchHosts are the hosts the channel downloads from in production
	// (fetch.Policy.AllowedHosts syntax; empty means any public host).
	FetchHosts() []string
}

// FetchError wraps an error from fetch.Client into this package's typed
// set: refused destinations (scheme, host, address), oversized bodies,
// redirect loops and non-retryable HTTP statuses are permanent; 429 is
// rate limited; everything else (network, timeouts, 5xx) is transient.
// what prefixes the message (e.g. "telegram getFile").
func FetchError(what string, err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s: %w", what, err)
	var se *fetch.StatusError
	switch {
	case errors.Is(err, fetch.ErrForbiddenScheme), errors.Is(err, fetch.ErrForbiddenHost),
		errors.Is(err, fetch.ErrForbiddenAddress), errors.Is(err, fetch.ErrTooLarge),
		errors.Is(err, fetch.ErrTooManyRedirects):
		return &PermanentError{Err: err}
	case errors.As(err, &se):
		switch {
		case se.Code == http.StatusTooManyRequests:
			return &RateLimitedError{RetryAfter: se.RetryAfter, Err: err}
		case se.Retryable, se.Code == http.StatusRequestTimeout:
			return &TransientError{Err: err}
		default:
			return &PermanentError{Err: err}
		}
	}
	return &TransientError{Err: err}
}

// OpenURL GETs rawURL through client with the given headers and returns
// its body as a FetchedAttachment; errors are classified by FetchError.
func OpenURL(ctx context.Context, client *fetch.Client, what, rawURL string, header http.Header) (*FetchedAttachment, error) {
	resp, err := client.Get(ctx, rawURL, header)
	if err != nil {
		return nil, FetchError(what, err)
	}
	return &FetchedAttachment{Body: resp.Body, ContentType: resp.ContentType, Size: resp.ContentLength}, nil
}

// LimitBody caps a FetchedAttachment at max bytes (a platform's own file
// limit, below the client's): a declared size over it fails at once, a
// longer stream fails with fetch.ErrTooLarge when it passes the limit.
func LimitBody(f *FetchedAttachment, max int64, what string) (*FetchedAttachment, error) {
	if f.Size > max {
		f.Body.Close()
		return nil, &PermanentError{Err: fmt.Errorf("%s: %d bytes over the %d-byte limit: %w", what, f.Size, max, fetch.ErrTooLarge)}
	}
	f.Body = &capped{rc: f.Body, left: max, what: what}
	return f, nil
}

type capped struct {
	rc   io.ReadCloser
	left int64
	what string
}

func (c *capped) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	if int64(n) > c.left {
		return int(c.left), &PermanentError{Err: fmt.Errorf("%s: body over the limit: %w", c.what, fetch.ErrTooLarge)}
	}
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.rc.Close() }

// FetchClientFor returns client extended to an account's own API base
// (settings api_base_url) when it differs from the channel's default
// base def: its host is allowed too, over plain http when base is http
// (the setting was already checked by APIBasePolicy). The address (SSRF)
// checks still apply: an internal host must be named in the fetch
// policy's InternalHosts (MIO_FETCH_INTERNAL_HOSTS).
func FetchClientFor(client *fetch.Client, base, def string) *fetch.Client {
	if client == nil || base == def {
		return client
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return client
	}
	return client.WithHost(u.Hostname(), u.Scheme == "http")
}
