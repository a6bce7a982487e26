package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
)

// replyPrefix names the reply phase's conversations (one per send).
const replyPrefix = "reply-"

// ReplyTrace is the reply phase of the dispatch benchmark: sends POSTed
// to /v1/outbound one by one at a steady rate, each timed from the POST
// to the fake provider's receipt, and split into stages by the
// timestamps the rows keep. The bench, the server and PostgreSQL share
// the machine's clock (a remote --database-url skews the stages, not the
// total).
type ReplyTrace struct {
	Rate    float64 // offered, per second
	Poisson bool    // random (exponential) gaps instead of even ones
	Count   int     // delivered and traced
	// Total is POST sent → provider receipt: what an agent's reply waits.
	Total Quantiles
	// Stages, in order: POST sent → 202 (commit included); 202 → River
	// job fetched (river_job.attempted_at); fetched → row claimed (the
	// outbox event of the claim); claimed → provider receipt.
	Accept, Wake, Claim, Send Quantiles
}

// Quantiles are the p50 and p99 of a set of durations.
type Quantiles struct{ P50, P99 time.Duration }

func quantiles(d []time.Duration) Quantiles {
	SortDurations(d)
	return Quantiles{P50: Percentile(d, 50), P99: Percentile(d, 99)}
}

// replyPost is one POST of the reply phase.
type replyPost struct {
	sent, answered time.Time
	status         int
}

// replyLatency POSTs rate sends per second for d, each to a conversation
// of its own, waits for the provider to receive them all, and traces
// them.
func replyLatency(ctx context.Context, env *Env, tgt *dispatchTarget, rate int, d time.Duration, poisson bool) (*ReplyTrace, error) {
	token, _, err := admin.New(tgt.pool, nil, env.BaseURL).TokenCreate(ctx, tgt.tenantID, "bench-dispatch-reply", []db.Role{db.RoleProduce})
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(conv string) replyPost {
		body := fmt.Sprintf(`{"idempotency_key":%q,"account_id":"%s","conversation_id":%q,"text":"bench reply"}`, conv, tgt.account, conv)
		p := replyPost{sent: time.Now()}
		resp, err := client.Do(bearerPost(env.BaseURL+"/v1/outbound", token, func() []byte { return []byte(body) })().httpRequest(ctx))
		p.answered = time.Now()
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			p.status = resp.StatusCode
		}
		return p
	}
	// Warm the connection and the server's caches (token, account).
	tgt.fake.expect(1)
	if p := post(replyPrefix + "warm"); p.status != http.StatusAccepted {
		return nil, fmt.Errorf("reply warm-up: POST /v1/outbound answered %d", p.status)
	}
	if err := tgt.fake.wait(ctx, time.Minute); err != nil {
		return nil, fmt.Errorf("reply warm-up: %w", err)
	}

	gap := time.Second / time.Duration(max(1, rate))
	n := max(1, int(d/gap))
	tgt.fake.startTracking()
	defer tgt.fake.stopTracking()
	tgt.fake.expect(n)
	posts := make([]replyPost, n)
	var wg sync.WaitGroup
	start := time.Now()
	next := start
	for k := range n {
		if poisson {
			next = next.Add(time.Duration(rand.ExpFloat64() * float64(gap)))
		} else {
			next = next.Add(gap)
		}
		time.Sleep(time.Until(next))
		wg.Add(1)
		go func() { // open loop: a slow answer does not delay the next send
			defer wg.Done()
			posts[k] = post(fmt.Sprintf("%s%d", replyPrefix, k))
		}()
	}
	wg.Wait()
	tr := &ReplyTrace{Rate: float64(n) / time.Since(start).Seconds(), Poisson: poisson}
	for k, p := range posts {
		if p.status != http.StatusAccepted {
			return tr, fmt.Errorf("reply %d: POST /v1/outbound answered %d", k, p.status)
		}
	}
	if err := tgt.fake.wait(ctx, 5*time.Minute); err != nil {
		return tr, err
	}
	return tr, tr.trace(ctx, tgt, posts)
}

// trace reads each reply's stage timestamps and fills the quantiles.
func (tr *ReplyTrace) trace(ctx context.Context, tgt *dispatchTarget, posts []replyPost) error {
	type stamps struct{ fetched, claimed time.Time }
	rows := map[string]stamps{}
	err := db.InTenantTx(ctx, tgt.pool, tgt.tenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, `
			SELECT o.conversation_id, coalesce(j.attempted_at, '-infinity'),
			       coalesce((SELECT min(e.at) FROM mio.outbox_events e
			                 WHERE e.tenant_id = o.tenant_id AND e.outbox_id = o.id AND e.state = 'sending'), '-infinity')
			FROM mio.outbox o LEFT JOIN river.river_job j ON j.id = o.job_id
			WHERE o.conversation_id LIKE $1`, replyPrefix+"%")
		if err != nil {
			return err
		}
		for r.Next() {
			var conv string
			var s stamps
			if err := r.Scan(&conv, &s.fetched, &s.claimed); err != nil {
				return err
			}
			rows[conv] = s
		}
		return r.Err()
	})
	if err != nil {
		return fmt.Errorf("reply trace: %w", err)
	}
	received := tgt.fake.receivedTimes()
	var total, accept, wake, claim, send []time.Duration
	for k, p := range posts {
		conv := fmt.Sprintf("%s%d", replyPrefix, k)
		got, ok := received[conv]
		if !ok {
			continue
		}
		total = append(total, got.Sub(p.sent))
		accept = append(accept, p.answered.Sub(p.sent))
		// A row taken over by another job (extras) keeps its own job's
		// attempted_at unset: no wake-up stage for it.
		if s := rows[conv]; s.fetched.Year() > 1 && s.claimed.Year() > 1 {
			wake = append(wake, s.fetched.Sub(p.answered))
			claim = append(claim, s.claimed.Sub(s.fetched))
			send = append(send, got.Sub(s.claimed))
		}
	}
	tr.Count = len(total)
	tr.Total, tr.Accept, tr.Wake, tr.Claim, tr.Send = quantiles(total), quantiles(accept), quantiles(wake), quantiles(claim), quantiles(send)
	return nil
}

// Print writes the reply phase's figures.
func (tr *ReplyTrace) Print(w io.Writer) {
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	arrivals := "evenly spaced"
	if tr.Poisson {
		arrivals = "Poisson arrivals"
	}
	fmt.Fprintf(w, "replies, POST /v1/outbound one by one, %.0f sends/s (%s), %d sends (each its own conversation)\n", tr.Rate, arrivals, tr.Count)
	fmt.Fprintf(w, "  POST->provider p50 %10s\n", ms(tr.Total.P50))
	fmt.Fprintf(w, "  POST->provider p99 %10s   (target <= 20ms at 20/s)\n", ms(tr.Total.P99))
	fmt.Fprintf(w, "  stages p50 / p99:  POST->202 %s / %s; 202->job fetched %s / %s; fetched->claimed %s / %s; claimed->provider %s / %s\n",
		ms(tr.Accept.P50), ms(tr.Accept.P99), ms(tr.Wake.P50), ms(tr.Wake.P99),
		ms(tr.Claim.P50), ms(tr.Claim.P99), ms(tr.Send.P50), ms(tr.Send.P99))
}

// startTracking makes the endpoint record each delivery's conversation
// and time of arrival.
func (f *fakeEndpoint) startTracking() {
	f.mu.Lock()
	f.received = map[string]time.Time{}
	f.mu.Unlock()
	f.tracking.Store(true)
}

func (f *fakeEndpoint) stopTracking() { f.tracking.Store(false) }

// record notes when the delivery in body arrived.
func (f *fakeEndpoint) record(body io.Reader, at time.Time) {
	var p struct {
		Data struct {
			Conversation struct {
				ID string `json:"id"`
			} `json:"conversation"`
		} `json:"data"`
	}
	if json.NewDecoder(body).Decode(&p) != nil || !strings.HasPrefix(p.Data.Conversation.ID, replyPrefix) {
		return
	}
	f.mu.Lock()
	if _, seen := f.received[p.Data.Conversation.ID]; !seen {
		f.received[p.Data.Conversation.ID] = at
	}
	f.mu.Unlock()
}

func (f *fakeEndpoint) receivedTimes() map[string]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]time.Time, len(f.received))
	for k, v := range f.received {
		out[k] = v
	}
	return out
}

// rowStages split queue → hand-off by the rows' own timestamps: queued
// (the queued event, before commit) → River job fetched → claimed →
// handed off.
type rowStages struct {
	Wake, Claim, Send Quantiles
	Count             int
}

// stagesOf reads the stages of the tenant's handed-off messages whose
// conversation matches like; a row whose own job never ran (another
// job's extra) is left out.
func stagesOf(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, like string) (rowStages, error) {
	var wake, claim, send []time.Duration
	err := db.InTenantTx(ctx, pool, tenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, `
			SELECT ev.queued, j.attempted_at, ev.claimed, o.handed_off_at
			FROM mio.outbox o
			JOIN river.river_job j ON j.id = o.job_id
			CROSS JOIN LATERAL (SELECT min(e.at) FILTER (WHERE e.state = 'queued') AS queued,
			                           min(e.at) FILTER (WHERE e.state = 'sending') AS claimed
			                    FROM mio.outbox_events e WHERE e.tenant_id = o.tenant_id AND e.outbox_id = o.id) ev
			WHERE o.conversation_id LIKE $1 AND o.handoff_state = 'handed_off'
			  AND ev.queued IS NOT NULL AND ev.claimed >= j.attempted_at`, like)
		if err != nil {
			return err
		}
		for r.Next() {
			var queued, fetched, claimed, handed time.Time
			if err := r.Scan(&queued, &fetched, &claimed, &handed); err != nil {
				return err
			}
			wake = append(wake, fetched.Sub(queued))
			claim = append(claim, claimed.Sub(fetched))
			send = append(send, handed.Sub(claimed))
		}
		return r.Err()
	})
	if err != nil {
		return rowStages{}, fmt.Errorf("stages: %w", err)
	}
	return rowStages{Wake: quantiles(wake), Claim: quantiles(claim), Send: quantiles(send), Count: len(wake)}, nil
}

func (s rowStages) print(w io.Writer) {
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	fmt.Fprintf(w, "  stages p50 / p99 (%d rows):  queued->job fetched %s / %s; fetched->claimed %s / %s; claimed->handed off %s / %s\n",
		s.Count, ms(s.Wake.P50), ms(s.Wake.P99), ms(s.Claim.P50), ms(s.Claim.P99), ms(s.Send.P50), ms(s.Send.P99))
}
