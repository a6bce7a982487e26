package top

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// ErrUnauthorized is the admin listener refusing the token (401).
var ErrUnauthorized = errors.New("the admin API refused the admin token (401): check --admin-token-file or MIO_ADMIN_TOKEN")

// Client reads the admin listener: /admin/v1 with an admin token (the
// viewer role is enough) and /metrics.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client of the admin listener at baseURL
// (http://host:port) authenticating with token.
func NewClient(baseURL, token string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: &http.Client{}}
}

// Tenant is a tenant of GET /admin/v1/tenants.
type Tenant struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// Consumer is a consumer row of the queue health.
type Consumer struct {
	TenantID string
	Name     string
	// Pending is the API's pending: deliveries waiting plus messages not
	// yet taken from the stream.
	Pending, AckPending, Redelivered, Dead int64
	// OldestPendingAge is 0 when nothing is pending.
	OldestPendingAge time.Duration
}

// Queue is a River queue row of the queue health.
type Queue struct {
	Name                          string
	Available, Running, Retryable int64
	// OldestAvailableAge is 0 when no job is available.
	OldestAvailableAge time.Duration
}

// DeadLetter is an item of GET /admin/v1/dead-letters.
type DeadLetter struct {
	Kind        string     `json:"kind"`
	TenantID    string     `json:"tenant_id"`
	ID          string     `json:"id"`
	ChannelType string     `json:"channel_type"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error"`
	CreatedAt   time.Time  `json:"created_at"`
	DeadAt      *time.Time `json:"dead_at"`
}

// TailMessage is an inbound message of the live tail.
type TailMessage struct {
	ID             string
	TenantID       string
	ChannelType    string
	ConversationID string
	ReceivedAt     time.Time
	Sender         string
	Text           string
}

// Counts are a process's counters for one channel since it started.
type Counts struct {
	Received float64 // mio_inbound_messages_total
	Sent     float64 // mio_gateway_outbound_send_total{outcome="success"}
}

// apiError is a non-2xx answer other than 401.
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string {
	if e.status == http.StatusForbidden {
		return "the admin API refused this request (403: " + e.message + "): the token needs the viewer role and this host must be in MIO_ADMIN_ALLOW_CIDRS"
	}
	return fmt.Sprintf("admin API answered %d: %s", e.status, e.message)
}

// request sends GET path?q with the token; the caller closes the body of
// a 2xx answer.
func (c *Client) request(ctx context.Context, path string, q url.Values, accept string) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("admin URL %q: %w", c.base, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", accept)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the method and URL are said once
		}
		return nil, fmt.Errorf("cannot reach the admin API at %s: %w", c.base, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, ErrUnauthorized
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var body struct {
		Error struct{ Message string } `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
		msg = body.Error.Message
	}
	return nil, &apiError{status: resp.StatusCode, message: msg}
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := c.request(ctx, path, q, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// maxTenantPages bounds the tenant list read each refresh (1,000 a page).
const maxTenantPages = 10

// Tenants lists the tenants (up to 10,000).
func (c *Client) Tenants(ctx context.Context) ([]Tenant, error) {
	var out []Tenant
	q := url.Values{"limit": {"1000"}}
	for range maxTenantPages {
		var page struct {
			Items []Tenant `json:"items"`
			Next  string   `json:"next"`
		}
		if err := c.getJSON(ctx, "/admin/v1/tenants", q, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			break
		}
		q.Set("after", page.Next)
	}
	return out, nil
}

// QueueHealth reads GET /admin/v1/queue-health: the consumers of
// tenantID (every tenant when empty) and the River queues.
func (c *Client) QueueHealth(ctx context.Context, tenantID string) ([]Consumer, []Queue, error) {
	var page struct {
		Items []struct {
			Kind               string   `json:"kind"`
			TenantID           string   `json:"tenant_id"`
			Consumer           string   `json:"consumer"`
			Pending            int64    `json:"pending"`
			AckPending         int64    `json:"ack_pending"`
			Redelivered        int64    `json:"redelivered"`
			Dead               int64    `json:"dead"`
			OldestPendingAge   *float64 `json:"oldest_pending_age_seconds"`
			Queue              string   `json:"queue"`
			Available          int64    `json:"available"`
			Running            int64    `json:"running"`
			Retryable          int64    `json:"retryable"`
			OldestAvailableAge *float64 `json:"oldest_available_age_seconds"`
		} `json:"items"`
	}
	if err := c.getJSON(ctx, "/admin/v1/queue-health", tenantQuery(tenantID), &page); err != nil {
		return nil, nil, err
	}
	var consumers []Consumer
	var queues []Queue
	for _, h := range page.Items {
		if h.Kind == "consumer" {
			consumers = append(consumers, Consumer{TenantID: h.TenantID, Name: h.Consumer, Pending: h.Pending,
				AckPending: h.AckPending, Redelivered: h.Redelivered, Dead: h.Dead, OldestPendingAge: seconds(h.OldestPendingAge)})
			continue
		}
		queues = append(queues, Queue{Name: h.Queue, Available: h.Available, Running: h.Running, Retryable: h.Retryable,
			OldestAvailableAge: seconds(h.OldestAvailableAge)})
	}
	return consumers, queues, nil
}

// DeadLetters reads the newest limit dead letters of tenantID (every
// tenant when empty).
func (c *Client) DeadLetters(ctx context.Context, tenantID string, limit int) ([]DeadLetter, error) {
	q := tenantQuery(tenantID)
	q.Set("limit", strconv.Itoa(limit))
	var page struct {
		Items []DeadLetter `json:"items"`
	}
	if err := c.getJSON(ctx, "/admin/v1/dead-letters", q, &page); err != nil {
		return nil, err
	}
	return page.Items, nil
}

// Counters reads the admin listener's /metrics: per channel, inbound
// messages committed and outbound messages handed off, since the process
// started.
func (c *Client) Counters(ctx context.Context) (map[string]Counts, error) {
	resp, err := c.request(ctx, "/metrics", nil, "text/plain;version=0.0.4")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseCounters(resp.Body)
}

// parseCounters reads the Prometheus text format.
func parseCounters(r io.Reader) (map[string]Counts, error) {
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	out := map[string]Counts{}
	for _, m := range fams["mio_inbound_messages_total"].GetMetric() {
		ch := label(m.GetLabel(), "channel_type")
		c := out[ch]
		c.Received += m.GetCounter().GetValue()
		out[ch] = c
	}
	for _, m := range fams["mio_gateway_outbound_send_total"].GetMetric() {
		if label(m.GetLabel(), "outcome") != "success" {
			continue
		}
		ch := label(m.GetLabel(), "channel_type")
		c := out[ch]
		c.Sent += m.GetCounter().GetValue()
		out[ch] = c
	}
	return out, nil
}

func label(pairs []*dto.LabelPair, name string) string {
	for _, p := range pairs {
		if p.GetName() == name {
			return p.GetValue()
		}
	}
	return ""
}

// Tail streams the tenant's inbound messages received from now on (the
// admin API's Server-Sent Events) to emit, calling live once the stream
// has started, until ctx ends or the stream does.
func (c *Client) Tail(ctx context.Context, tenantID string, live func(), emit func(TailMessage)) error {
	resp, err := c.request(ctx, "/admin/v1/tenants/"+url.PathEscape(tenantID)+"/tail", nil, "text/event-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	live()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "message" && data != "" {
				if m, err := decodeTail(tenantID, data); err == nil {
					emit(m)
				}
			}
			event, data = "", ""
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("tail: %w", err)
	}
	return errors.New("tail: the stream ended")
}

// decodeTail reads one tail event's data: the message with its envelope.
func decodeTail(tenantID, data string) (TailMessage, error) {
	var m struct {
		ID             string    `json:"id"`
		ChannelType    string    `json:"channel_type"`
		ConversationID string    `json:"conversation_id"`
		ReceivedAt     time.Time `json:"received_at"`
		Envelope       struct {
			Sender struct {
				ID   string `json:"id"`
				Name string `json:"display_name"`
			} `json:"sender"`
			Text        string            `json:"text"`
			Attachments []json.RawMessage `json:"attachments"`
			Deleted     bool              `json:"deleted"`
		} `json:"envelope"`
	}
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		return TailMessage{}, err
	}
	text := m.Envelope.Text
	switch {
	case m.Envelope.Deleted:
		text = "(deleted)"
	case text == "" && len(m.Envelope.Attachments) > 0:
		text = fmt.Sprintf("(%d attachments)", len(m.Envelope.Attachments))
	}
	sender := m.Envelope.Sender.Name
	if sender == "" {
		sender = m.Envelope.Sender.ID
	}
	return TailMessage{ID: m.ID, TenantID: tenantID, ChannelType: m.ChannelType, ConversationID: m.ConversationID,
		ReceivedAt: m.ReceivedAt, Sender: sender, Text: text}, nil
}

func tenantQuery(tenantID string) url.Values {
	q := url.Values{}
	if tenantID != "" {
		q.Set("tenant_id", tenantID)
	}
	return q
}

func seconds(s *float64) time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(*s * float64(time.Second))
}
