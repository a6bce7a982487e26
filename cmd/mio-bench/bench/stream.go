package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// StreamOptions configure the stream benchmark.
type StreamOptions struct {
	// Streams open at once. Default 200.
	Streams int
	// Rate is each stream's appends per second. Default 10.
	Rate int
	// Duration each stream appends for. Default 30s.
	Duration time.Duration
	// EditInterval is the webhook channel's edit interval of streamed
	// replies (channels.Info.StreamEditInterval), the bound the
	// visibility is measured against. Default 250ms.
	EditInterval time.Duration
	// CPUProfile, when set, is where the server's CPU profile of the
	// appends' middle half is written.
	CPUProfile string
	// AllocsProfile, when set, is where the server's allocation profile
	// is written once the appends are done.
	AllocsProfile string
	// Latencies, when set, is where every append is written, one a
	// line: its start in microseconds since the streams started, its
	// latency in milliseconds, and its stream's conversation.
	Latencies string
}

// StreamResult holds the figures of one run.
type StreamResult struct {
	Streams, Rate int
	Duration      time.Duration
	EditInterval  time.Duration
	// Appends made; Failed of them answered other than 200.
	Appends, Failed int
	// Append is the latency of POST /v1/outbound/{id}/append.
	Append Quantiles
	// Visible is, per append, the time from its request to the first
	// delivery at the receiver that shows its text; VisibleP95 its 95th
	// percentile, Within the share of appends visible within one edit
	// interval + 100 ms.
	VisibleP50, VisibleP95 time.Duration
	Within                 float64
	// Edits are the deliveries the receiver took (sends and edits).
	Edits int
	// Complete counts the streams whose last delivery is exactly their
	// text.
	Complete int
}

// streamReceiver is a webhook endpoint that records, per conversation,
// when each length of its text was first shown. Signatures are not
// checked: the benchmark is about the stream, not the receiver.
type streamReceiver struct {
	url string
	srv *http.Server
	mu  sync.Mutex
	// shown: per conversation, the deliveries' text lengths and arrival.
	shown map[string][]shownAt
	last  map[string]string
	n     int
}

type shownAt struct {
	length int
	at     time.Time
}

func newStreamReceiver() (*streamReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &streamReceiver{url: "http://" + ln.Addr().String() + "/hook", shown: map[string][]shownAt{}, last: map[string]string{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *streamReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	var body struct {
		Data struct {
			Text         string `json:"text"`
			Conversation struct {
				ID string `json:"id"`
			} `json:"conversation"`
		} `json:"data"`
	}
	raw, _ := io.ReadAll(io.LimitReader(req.Body, maxDelivery))
	_ = json.Unmarshal(raw, &body)
	conv := body.Data.Conversation.ID
	r.mu.Lock()
	r.shown[conv] = append(r.shown[conv], shownAt{length: len(body.Data.Text), at: at})
	r.last[conv] = body.Data.Text
	r.n++
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"`+conv+`"}`)
}

func (r *streamReceiver) close() { _ = r.srv.Close() }

// streamAppend is one append as the benchmark made it.
type streamAppend struct {
	conv   string
	length int // the text's length once taken
	at     time.Time
}

// Stream measures streamed replies end to end through `mio serve`:
// Streams streams at once on a webhook account without rate limits, each
// appending Rate deltas a second for Duration and then finishing. It
// reports the append request's latency and how soon each append's text
// was shown at the receiver (the webhook channel edits at most once per
// its edit interval, coalescing the appends in between).
func Stream(ctx context.Context, env *Env, opts StreamOptions) (*StreamResult, error) {
	if opts.Streams <= 0 {
		opts.Streams = 200
	}
	if opts.Rate <= 0 {
		opts.Rate = 10
	}
	if opts.Duration <= 0 {
		opts.Duration = 30 * time.Second
	}
	if opts.EditInterval <= 0 {
		opts.EditInterval = 250 * time.Millisecond
	}
	res := &StreamResult{Streams: opts.Streams, Rate: opts.Rate, Duration: opts.Duration, EditInterval: opts.EditInterval}
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 2, RuntimeRole: "mio_runtime", StatementTimeout: -1})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	rcv, err := newStreamReceiver()
	if err != nil {
		return nil, err
	}
	defer rcv.close()
	box, _ := secretbox.New(env.MasterKey)
	svc := admin.New(pool, box, env.BaseURL)
	tenant, _, err := svc.TenantCreate(ctx, tenantName("bench-stream"))
	if err != nil {
		return nil, err
	}
	settings, _ := json.Marshal(map[string]string{"endpoint_url": rcv.url})
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook",
		WebhookSecret: newWebhookSecret(), Settings: settings})
	if err != nil {
		return nil, err
	}
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "bench-stream", []db.Role{db.RoleProduce})
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: opts.Streams}}
	c := client.New(env.BaseURL, token, client.WithHTTPClient(hc))

	var (
		mu      sync.Mutex
		appends []streamAppend
		lat     []time.Duration
		texts   = map[string]string{}
		wg      sync.WaitGroup
		firstEr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstEr == nil {
			firstEr = err
		}
		res.Failed++
		mu.Unlock()
	}
	profiled := env.profileAfter(ctx, opts.Duration/4, opts.Duration/2, opts.CPUProfile)
	start := time.Now()
	for i := range opts.Streams {
		wg.Go(func() {
			// Streams start spread over one append interval, and their
			// appends keep that spread: the ticker starts before the
			// open, so how long the open took does not line the
			// streams' appends up (a slow open's first append follows
			// it at once, as an agent's first chunk does).
			every := time.Second / time.Duration(opts.Rate)
			time.Sleep(every * time.Duration(i) / time.Duration(opts.Streams))
			tick := time.NewTicker(every)
			defer tick.Stop()
			conv := fmt.Sprintf("stream-%d", i)
			sent, err := c.Send(ctx, envelope.SendCommand{IdempotencyKey: "bench-stream-" + uuid.NewString(),
				AccountID: acct.ID, ConversationID: conv, Stream: true})
			if err != nil {
				fail(err)
				return
			}
			var text strings.Builder
			seq := 0
			for time.Since(start) < opts.Duration && ctx.Err() == nil {
				<-tick.C
				seq++
				delta := fmt.Sprintf("w%d ", seq)
				t0 := time.Now()
				if err := c.StreamAppend(ctx, sent.ID, seq, delta); err != nil {
					fail(err)
					return
				}
				d := time.Since(t0)
				text.WriteString(delta)
				mu.Lock()
				lat = append(lat, d)
				appends = append(appends, streamAppend{conv: conv, length: text.Len(), at: t0})
				mu.Unlock()
			}
			if err := c.StreamFinish(ctx, sent.ID, client.StreamFinish{Seq: seq}); err != nil {
				fail(err)
				return
			}
			mu.Lock()
			texts[conv] = text.String()
			mu.Unlock()
		})
	}
	wg.Wait()
	if opts.Latencies != "" {
		var b strings.Builder
		for i, a := range appends {
			fmt.Fprintf(&b, "%d %.3f %s\n", a.at.Sub(start).Microseconds(), float64(lat[i].Microseconds())/1000, a.conv)
		}
		if err := os.WriteFile(opts.Latencies, []byte(b.String()), 0o644); err != nil {
			return res, fmt.Errorf("stream: latencies: %w", err)
		}
	}
	if err := profiled(); err != nil {
		return res, fmt.Errorf("stream: cpu profile: %w", err)
	}
	if opts.AllocsProfile != "" {
		if err := env.AllocsProfile(ctx, opts.AllocsProfile); err != nil {
			return res, fmt.Errorf("stream: allocation profile: %w", err)
		}
	}
	if firstEr != nil {
		return res, fmt.Errorf("stream: %d requests failed, the first: %w", res.Failed, firstEr)
	}
	// The final edits land within an edit interval of the finishes.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rcv.mu.Lock()
		done := 0
		for conv, text := range texts {
			if rcv.last[conv] == text {
				done++
			}
		}
		rcv.mu.Unlock()
		if done == len(texts) || time.Now().After(deadline) {
			res.Complete = done
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	res.Appends = len(appends)
	res.Append = quantiles(lat)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	res.Edits = rcv.n
	var vis []time.Duration
	within := 0
	for _, a := range appends {
		shown := rcv.shown[a.conv]
		var d time.Duration
		if j := firstShowing(shown, a); j >= 0 {
			d = shown[j].at.Sub(a.at)
		} else {
			d = opts.Duration // never shown: counted as late
		}
		vis = append(vis, d)
		if d <= opts.EditInterval+100*time.Millisecond {
			within++
		}
	}
	SortDurations(vis)
	res.VisibleP50, res.VisibleP95 = Percentile(vis, 50), Percentile(vis, 95)
	if len(vis) > 0 {
		res.Within = float64(within) / float64(len(vis))
	}
	return res, nil
}

// firstShowing is the index of the first delivery after a's request
// that shows a's text (deliveries arrive in order, texts only grow),
// -1 for none.
func firstShowing(shown []shownAt, a streamAppend) int {
	for j, s := range shown {
		if s.length >= a.length && !s.at.Before(a.at) {
			return j
		}
	}
	return -1
}

// Print writes the result.
func (r *StreamResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench stream — %d streamed replies at once, %d appends/s each for %s, webhook channel (edit interval %s) to a local receiver\n",
		r.Streams, r.Rate, r.Duration, r.EditInterval)
	fmt.Fprintf(w, "  appends            %d (%d failed)\n", r.Appends, r.Failed)
	fmt.Fprintf(w, "  append request     p50 %s  p99 %s  (target p99 ≤ 20ms)\n", r.Append.P50.Round(10*time.Microsecond), r.Append.P99.Round(10*time.Microsecond))
	fmt.Fprintf(w, "  visible at receiver p50 %s  p95 %s; %.1f%% within edit interval + 100ms\n",
		r.VisibleP50.Round(time.Millisecond), r.VisibleP95.Round(time.Millisecond), 100*r.Within)
	fmt.Fprintf(w, "  deliveries         %d (sends and edits); %d of %d streams end with exactly their text\n", r.Edits, r.Complete, r.Streams)
}
