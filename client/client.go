// Package client is the Go client of MIO's agent API: durable consumers
// (pull, ack, nak, term, extend, and a Consume loop that extends leases
// while a handler runs), messages, and outbound replies. It imports nothing
// of the server but the envelope types.
//
//	c := client.New("http://localhost:8080", os.Getenv("MIO_TOKEN"))
//	err := c.Consume(ctx, "agent", func(ctx context.Context, d client.Delivery) error {
//		fmt.Println(d.Message.Text)
//		return nil // ack; an error naks with backoff; client.Term(reason) terminates
//	}, client.ConsumeOptions{})
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/envelope"
)

// Client calls one MIO server with one API token. It is safe for
// concurrent use.
type Client struct {
	base   string
	token  string
	http   *http.Client
	retry  Retry
	userAg string
	tracer trace.Tracer // handler spans of Consume; nil: none
}

// Retry is the policy for 502/503/504 answers and network errors:
// exponential backoff with full jitter.
type Retry struct {
	// Attempts in all (1 = no retry). Default 5.
	Attempts int
	// Base delay, doubled per attempt. Default 100ms.
	Base time.Duration
	// Max delay. Default 5s.
	Max time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: 75 s timeout, enough for
// a 60 s long poll).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRetry sets the retry policy.
func WithRetry(r Retry) Option { return func(c *Client) { c.retry = r } }

// New returns a client for baseURL (e.g. http://localhost:8080) and token.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token,
		http: &http.Client{Timeout: 75 * time.Second}, userAg: "mio-go-client"}
	for _, o := range opts {
		o(c)
	}
	if c.retry.Attempts == 0 {
		c.retry.Attempts = 5
	}
	if c.retry.Base == 0 {
		c.retry.Base = 100 * time.Millisecond
	}
	if c.retry.Max == 0 {
		c.retry.Max = 5 * time.Second
	}
	return c
}

// APIError is an error answer of the server.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("mio: %d %s: %s", e.Status, e.Code, e.Message)
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// backoff is the ceiling of the random wait before attempt (≥ 1): Base
// doubled per earlier retry, at most Max. The doubling stops at Max, so
// many attempts cannot overflow the shift into a negative wait.
func (r Retry) backoff(attempt int) time.Duration {
	d := r.Base
	for i := 1; i < attempt && d < r.Max; i++ {
		d *= 2
	}
	return min(d, r.Max)
}

func retryable(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// do sends a JSON request and decodes a JSON answer into out (when
// non-nil), retrying per the policy.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	if out == nil {
		return c.doDecode(ctx, method, path, in, nil)
	}
	return c.doDecode(ctx, method, path, in, func(data []byte) error { return json.Unmarshal(data, out) })
}

// doDecode is do with the answer's decoder: decode, when set, reads a
// successful answer's body.
func (c *Client) doDecode(ctx context.Context, method, path string, in any, decode func([]byte) error) error {
	return c.doHeader(ctx, method, path, nil, in, decode)
}

// doHeader is doDecode sending header too.
func (c *Client) doHeader(ctx context.Context, method, path string, header http.Header, in any, decode func([]byte) error) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("mio: encode request: %w", err)
		}
	}
	return c.send(ctx, method, path, header, body, in != nil, func(resp *http.Response) error {
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return &readError{fmt.Errorf("mio: read answer: %w", err)}
		}
		if decode != nil && len(data) > 0 {
			if err := decode(data); err != nil {
				return fmt.Errorf("mio: decode answer: %w", err)
			}
		}
		return nil
	})
}

// doRaw sends a request without a body and hands a successful answer to
// read, retrying per the policy.
func (c *Client) doRaw(ctx context.Context, method, path string, read func(*http.Response) error) error {
	return c.send(ctx, method, path, nil, nil, false, read)
}

// readError is a failure to read a successful answer: retried like a
// network error.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// send runs the request (with header's fields added) with retries; ok
// reads a successful answer.
func (c *Client) send(ctx context.Context, method, path string, header http.Header, body []byte, hasBody bool, ok func(*http.Response) error) error {
	var lastErr error
	for attempt := 0; attempt < c.retry.Attempts; attempt++ {
		if attempt > 0 {
			d := c.retry.backoff(attempt)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(rand.N(d) + time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("mio: %w", err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("User-Agent", c.userAg)
		injectTrace(ctx, req.Header)
		if hasBody {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			lastErr = fmt.Errorf("mio: %s %s: %w", method, path, err)
			continue
		}
		if resp.StatusCode >= 300 {
			data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if err != nil {
				lastErr = fmt.Errorf("mio: read answer: %w", err)
				continue
			}
			ae := &APIError{Status: resp.StatusCode}
			var eb struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal(data, &eb) == nil {
				ae.Code, ae.Message = eb.Error.Code, eb.Error.Message
			}
			if retryable(resp.StatusCode) {
				lastErr = ae
				continue
			}
			return ae
		}
		err = ok(resp)
		resp.Body.Close()
		var re *readError
		if errors.As(err, &re) {
			lastErr = re.err
			continue
		}
		return err
	}
	return lastErr
}

// Duration marshals as a Go duration string, as the API expects.
type Duration time.Duration

// MarshalJSON writes "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// GetMessage returns one inbound message.
func (c *Client) GetMessage(ctx context.Context, id uuid.UUID) (*envelope.Message, error) {
	var m envelope.Message
	if err := c.do(ctx, http.MethodGet, "/v1/messages/"+id.String(), nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func consumerPath(name string) string { return "/v1/consumers/" + url.PathEscape(name) }
