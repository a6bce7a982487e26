package bench

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miohq/mio/channels/webhook"
)

// signedReceiver is the endpoint of `mio-bench dispatch-webhook`: a
// net/http server, as an agent's endpoint would be, that reads each
// delivery whole, verifies its Standard Webhooks signature with the
// account's secret (webhook-id, webhook-timestamp, webhook-signature; see
// docs/channels.md), and answers 200 with an id of its own. A delivery
// that fails the check is answered 401 and counted as rejected; a
// webhook-id seen before is answered 200 again and counted as a
// duplicate. Unlike the dispatch benchmark's raw provider, its cost is a
// real receiver's, on the same machine.
type signedReceiver struct {
	url    string
	secret string
	ln     net.Listener
	srv    *http.Server

	rejected   atomic.Int64
	duplicates atomic.Int64
	answered   atomic.Int64 // ids handed out
	// conns counts the connections the sender opened: with keep-alive,
	// about as many as its sends in flight at once, not one a send.
	conns atomic.Int64

	mu sync.Mutex
	// seen holds the webhook-ids of the accepted deliveries of the
	// current phase (expect), and received when each message's first
	// delivery arrived, by data.message_id.
	seen        map[string]struct{}
	received    map[string]time.Time
	first, last time.Time
	target      int
	done        chan struct{}
	// failed is closed at the first rejected delivery.
	failed     chan struct{}
	failedOnce sync.Once
	firstErr   error
}

// newSignedReceiver starts a receiver on a loopback port verifying
// deliveries signed with secret (a whsec_ secret).
func newSignedReceiver(secret string) (*signedReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &signedReceiver{url: "http://" + ln.Addr().String() + "/hook", secret: secret, ln: ln,
		failed: make(chan struct{})}
	r.expect(0)
	mux := http.NewServeMux()
	mux.Handle("POST /hook", r)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// maxDelivery bounds the body the receiver reads.
const maxDelivery = 1 << 20

func (r *signedReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, maxDelivery))
	if err == nil {
		err = verifyDelivery(r.secret, req.Header, body, at)
	}
	if err != nil {
		r.reject(err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var p struct {
		Data struct {
			MessageID string `json:"message_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &p)
	r.accept(req.Header.Get(webhook.HeaderID), p.Data.MessageID, at)
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"id":"rcv-%d"}`, r.answered.Add(1))
}

// verifyDelivery checks a delivery as a Standard Webhooks receiver does:
// the three headers present, webhook-timestamp within
// webhook.SignatureTolerance of now, and one of the v1 signatures in
// webhook-signature equal (in constant time) to the body's under secret.
func verifyDelivery(secret string, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get(webhook.HeaderID), h.Get(webhook.HeaderTimestamp), h.Get(webhook.HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("malformed webhook-timestamp %q", ts)
	}
	sent := time.Unix(unix, 0)
	if d := now.Sub(sent); d > webhook.SignatureTolerance || d < -webhook.SignatureTolerance {
		return fmt.Errorf("webhook-timestamp %s is outside the tolerance", ts)
	}
	want, err := webhook.Sign(secret, id, sent, body)
	if err != nil {
		return err
	}
	for _, sig := range strings.Fields(sigs) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no matching v1 signature")
}

func (r *signedReceiver) reject(err error) {
	r.rejected.Add(1)
	r.failedOnce.Do(func() {
		r.mu.Lock()
		r.firstErr = err
		r.mu.Unlock()
		close(r.failed)
	})
}

// accept records a verified delivery of webhook-id id of message msg;
// the phase is done at its target-th distinct id.
func (r *signedReceiver) accept(id, msg string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.seen[id]; dup {
		r.duplicates.Add(1)
		return
	}
	r.seen[id] = struct{}{}
	if _, ok := r.received[msg]; !ok {
		r.received[msg] = at
	}
	if len(r.seen) == 1 {
		r.first = at
	}
	r.last = at
	if len(r.seen) == r.target {
		close(r.done)
	}
}

// expect starts a phase: the counts start over, and wait returns once n
// distinct deliveries are accepted.
func (r *signedReceiver) expect(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen, r.received = map[string]struct{}{}, map[string]time.Time{}
	r.first, r.last = time.Time{}, time.Time{}
	r.target, r.done = n, make(chan struct{})
}

// wait waits for the phase's deliveries, at most d; the first rejected
// delivery ends it with an error.
func (r *signedReceiver) wait(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-r.failed:
		r.mu.Lock()
		defer r.mu.Unlock()
		return fmt.Errorf("the receiver rejected a delivery (%d in all): %w", r.rejected.Load(), r.firstErr)
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		r.mu.Lock()
		defer r.mu.Unlock()
		return fmt.Errorf("the receiver accepted %d of %d sends", len(r.seen), r.target)
	}
}

// span returns the phase's first and last accepted delivery times.
func (r *signedReceiver) span() (first, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first, r.last
}

// receivedTimes returns when each message's first delivery of the phase
// arrived, by message id.
func (r *signedReceiver) receivedTimes() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(r.received))
	for k, v := range r.received {
		out[k] = v
	}
	return out
}

func (r *signedReceiver) close() { _ = r.srv.Close() }
