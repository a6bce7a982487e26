// Package fetch downloads attachments from chat platforms without becoming
// an SSRF vector: HTTPS only, optional host allow-list (re-checked on every
// redirect), a redirect limit, a size cap enforced while streaming, and a
// connect-time check of every dialed IP address that refuses loopback,
// private, link-local (cloud metadata), CGNAT and other non-public ranges.
// The address check runs in net.Dialer.Control, after DNS and just before
// connect, so a name that re-resolves to an internal address (DNS
// rebinding) is refused too.
//
// Internal to MIO; not a stable API.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Policy says what a Client may fetch. The zero value is the production
// policy: any public HTTPS host, 25 MiB, 60 s, 3 redirects.
type Policy struct {
	// AllowedHosts lists the hosts that may be fetched, each exact
	// ("files.slack.com") or a "*.suffix" wildcard matching any subdomain
	// of suffix but not suffix itself ("*.slack-edge.com"). Compared
	// case-insensitively, port ignored. Default empty: any host.
	AllowedHosts []string
	// AllowedNets lists address ranges permitted even though they fall in
	// a refused range (e.g. 127.0.0.0/8 for a test server, or an internal
	// mirror). Default none.
	AllowedNets []netip.Prefix
	// AllowHTTP permits plain http:// URLs. Tests only. Default false.
	AllowHTTP bool
	// HTTPHosts are hosts (exact names, port ignored) that may be fetched
	// over plain http:// even without AllowHTTP: an account's http API
	// base that MIO's API base policy accepted. Default none.
	HTTPHosts []string
	// InternalHosts are host names (exact, case-insensitive, port
	// ignored) whose connections skip the address check, so an operator
	// can let downloads reach one named internal server (a private
	// mirror, a self-hosted Bot API server, a test fake) without opening
	// private ranges to every host (MIO_FETCH_INTERNAL_HOSTS). The host
	// must still pass AllowedHosts. Default none.
	InternalHosts []string
	// AllowPrivate turns the address check off entirely. Tests only.
	// Default false.
	AllowPrivate bool
	// MaxBytes caps the response body. Default 25 MiB.
	MaxBytes int64
	// MaxRedirects caps the redirects followed. Default 3; negative means
	// none are followed.
	MaxRedirects int
	// Resolve, when set, replaces DNS for host names: tests map names such
	// as "good.test" to addresses. Every address it returns still goes
	// through the connect-time check. Default nil: the system resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Timeout bounds a whole Get, reading the body included: a body not
	// read to its end by then fails with ErrIncomplete and ErrTimeout,
	// even if its last bytes arrive later. Default 60 s.
	Timeout time.Duration
}

// Defaults applied by NewClient.
const (
	DefaultMaxBytes     = 25 << 20
	DefaultMaxRedirects = 3
	DefaultTimeout      = 60 * time.Second
)

func (p Policy) withDefaults() Policy {
	if p.MaxBytes <= 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	switch {
	case p.MaxRedirects == 0:
		p.MaxRedirects = DefaultMaxRedirects
	case p.MaxRedirects < 0:
		p.MaxRedirects = 0
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	hosts := make([]string, 0, len(p.AllowedHosts))
	for _, h := range p.AllowedHosts {
		if h = normalizeHost(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	p.AllowedHosts = hosts
	p.HTTPHosts = normalizeHosts(p.HTTPHosts)
	p.InternalHosts = normalizeHosts(p.InternalHosts)
	return p
}

func normalizeHosts(in []string) []string {
	out := make([]string, 0, len(in))
	for _, h := range in {
		if h = normalizeHost(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// Client fetches URLs under one Policy. It is safe for concurrent use and
// keeps connections alive between calls.
type Client struct {
	p  Policy
	hc *http.Client
}

// NewClient returns a Client enforcing p (defaults filled in).
func NewClient(p Policy) *Client {
	p = p.withDefaults()
	c := &Client{p: p}
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control:   p.control,
	}
	internal := &net.Dialer{Timeout: dialer.Timeout, KeepAlive: dialer.KeepAlive}
	c.hc = &http.Client{
		Transport: &http.Transport{
			// No proxy: the address check must see the real destination.
			Proxy:                 nil,
			DialContext:           p.dialContext(dialer, internal),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		// No Client.Timeout: Get bounds each request with a context, which
		// the body checks too (see wholeBody).
		CheckRedirect: c.checkRedirect,
	}
	return c
}

// WithHost returns a client that also allows host (an exact name) and,
// when plainHTTP, plain http:// to it; it shares c's connections and
// address checks, and c is unchanged. Adapters use it for an account's
// own API base (api_base_url). When c allows any host, only plainHTTP
// changes anything.
func (c *Client) WithHost(host string, plainHTTP bool) *Client {
	host = normalizeHost(host)
	p := c.p
	if len(p.AllowedHosts) > 0 && !p.hostAllowed(host) {
		p.AllowedHosts = append(p.AllowedHosts[:len(p.AllowedHosts):len(p.AllowedHosts)], host)
	}
	if plainHTTP {
		p.HTTPHosts = append(p.HTTPHosts[:len(p.HTTPHosts):len(p.HTTPHosts)], host)
	}
	n := &Client{p: p}
	hc := *c.hc
	hc.CheckRedirect = n.checkRedirect
	n.hc = &hc
	return n
}

// Response is a successful (2xx) response. The caller must close Body.
type Response struct {
	// Body yields at most MaxBytes bytes, then fails with ErrTooLarge if
	// the server sends more. It ends with io.EOF only when the whole body
	// arrived within Policy.Timeout (and as many bytes as a declared
	// Content-Length); otherwise its error wraps ErrIncomplete.
	Body io.ReadCloser
	// ContentLength is the declared length, -1 when unknown.
	ContentLength int64
	ContentType   string
	// FinalURL is the URL answered after redirects.
	FinalURL   string
	Header     http.Header
	StatusCode int
}

// Get fetches rawURL with the given extra request headers (e.g.
// Authorization). Errors wrap ErrForbiddenScheme, ErrForbiddenHost,
// ErrForbiddenAddress, ErrTooManyRedirects, ErrTooLarge or ErrTimeout, or
// are a *StatusError for a non-2xx answer. Error texts name the host only,
// never the URL, which may carry a token (Telegram puts the bot token in
// the path).
func (c *Client) Get(ctx context.Context, rawURL string, header http.Header) (*Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("fetch: malformed URL")
	}
	if err := c.p.checkURL(u); err != nil {
		return nil, fmt.Errorf("fetch: get %s: %w", u.Host, err)
	}
	// The request's context lives until Body is closed: its end, whatever
	// the cause, means the body may be cut short.
	ctx, cancel := context.WithTimeoutCause(ctx, c.p.Timeout, ErrTimeout)
	resp, err := c.do(ctx, u, header)
	if err != nil {
		cancel()
		return nil, err
	}
	return &Response{
		Body: &limitedBody{rc: &wholeBody{rc: resp.Body, ctx: ctx, cancel: cancel, host: resp.Request.URL.Host,
			timeout: c.p.Timeout, want: resp.ContentLength}, left: c.p.MaxBytes},
		ContentLength: resp.ContentLength,
		ContentType:   resp.Header.Get("Content-Type"),
		FinalURL:      resp.Request.URL.String(),
		Header:        resp.Header,
		StatusCode:    resp.StatusCode,
	}, nil
}

// do sends the request and checks the answer's status and declared size.
func (c *Client) do(ctx context.Context, u *url.URL, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetch: get %s: %w", u.Host, err)
	}
	for k, vs := range header {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its text holds the full URL
		}
		if errors.Is(context.Cause(ctx), ErrTimeout) {
			return nil, fmt.Errorf("fetch: get %s: %w after %s", u.Host, ErrTimeout, c.p.Timeout)
		}
		return nil, fmt.Errorf("fetch: get %s: %w", u.Host, err)
	}
	host := resp.Request.URL.Host
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // lets the connection be reused
		resp.Body.Close()
		return nil, fmt.Errorf("fetch: get %s: %w", host, newStatusError(resp, time.Now()))
	}
	if resp.ContentLength > c.p.MaxBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("fetch: get %s: Content-Length %d over %d: %w", host, resp.ContentLength, c.p.MaxBytes, ErrTooLarge)
	}
	return resp, nil
}

// checkURL enforces the scheme and the host allow-list.
func (p Policy) checkURL(u *url.URL) error {
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && (p.AllowHTTP || slices.Contains(p.HTTPHosts, normalizeHost(u.Hostname()))):
	default:
		return fmt.Errorf("%w %q", ErrForbiddenScheme, u.Scheme)
	}
	host := normalizeHost(u.Hostname())
	if host == "" {
		return fmt.Errorf("%w: empty host", ErrForbiddenHost)
	}
	if !p.hostAllowed(host) {
		return fmt.Errorf("%w %q", ErrForbiddenHost, host)
	}
	return nil
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

func (p Policy) hostAllowed(host string) bool {
	if len(p.AllowedHosts) == 0 {
		return true
	}
	for _, a := range p.AllowedHosts {
		if suffix, ok := strings.CutPrefix(a, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == a {
			return true
		}
	}
	return false
}

// checkRedirect re-applies the URL checks to each hop, limits their number
// and strips credentials once the chain has left the first host.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > c.p.MaxRedirects {
		return fmt.Errorf("%w (max %d)", ErrTooManyRedirects, c.p.MaxRedirects)
	}
	if err := c.p.checkURL(req.URL); err != nil {
		return err
	}
	// net/http already drops Authorization for hosts that are not the
	// first host or its subdomains, and restores it if a later hop returns
	// to the first host. Be stricter: any other host (port included) on
	// the way, and credentials are gone for the rest of the chain.
	first := via[0].URL
	left := !sameHost(req.URL, first)
	for _, r := range via[1:] {
		left = left || !sameHost(r.URL, first)
	}
	if left {
		for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
			req.Header.Del(h)
		}
	}
	return nil
}

func sameHost(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && normalizeHost(a.Hostname()) == normalizeHost(b.Hostname()) && a.Port() == b.Port()
}
