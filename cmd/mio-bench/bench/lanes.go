package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// LanesResult holds the figures of one ordered-lanes run.
type LanesResult struct {
	Lanes, PerLane int
	// RateLimited: the account had a rate limit (see
	// DispatchOptions.RateLimited).
	RateLimited bool
	Elapsed     time.Duration
	PerSec      float64
	// OutOfOrder counts messages handed off before an earlier message of
	// their lane (always 0 unless ordering is broken).
	OutOfOrder       int
	ReferencePerSec  float64
	ReferenceElapsed time.Duration
}

// RunLanes measures ordered lanes through `mio serve`: perLane sends in
// each of lanes conversations of one webhook account (no rate limit) to a
// local fake provider that answers 200 at once, all accepted first (in
// transactions of 500, the lanes interleaved) and timed from the first
// accept to the last hand-off the provider receives. A lane sends one
// message at a time, so one lane measures how fast a lane hands on to its
// next message. Reference, in the same run and database: River's
// throughput for as many no-op jobs (as `mio-bench dispatch`).
func RunLanes(ctx context.Context, env *Env, lanes, perLane int, rateLimited bool) (*LanesResult, error) {
	if lanes <= 0 || perLane <= 0 {
		return nil, fmt.Errorf("lanes: want lanes and per-lane > 0, got %d and %d", lanes, perLane)
	}
	pool, err := db.Open(ctx, env.DatabaseURL, db.PoolOptions{MaxConns: 8, RuntimeRole: "mio_runtime", StatementTimeout: -1})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	res := &LanesResult{Lanes: lanes, PerLane: perLane, RateLimited: rateLimited}
	total := lanes * perLane
	var ref DispatchResult
	if err := riverReference(ctx, env, pool, DispatchOptions{Messages: total, InsertBatch: 500}, &ref); err != nil {
		return res, fmt.Errorf("river reference: %w", err)
	}
	res.ReferencePerSec, res.ReferenceElapsed = ref.ReferencePerSec, ref.ReferenceElapsed

	tgt, err := newDispatchTarget(ctx, env, pool, "bench-lanes", rateLimited)
	if err != nil {
		return res, err
	}
	defer tgt.close()
	// Warm-up: connections, caches, prepared statements.
	tgt.fake.expect(200)
	if err := tgt.enqueue(ctx, 200, func(i int) string { return fmt.Sprintf("warm-%d", i) }); err != nil {
		return res, err
	}
	if err := tgt.fake.wait(ctx, 60*time.Second); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}

	tgt.fake.expect(total)
	start := time.Now()
	const batch = 500
	for done := 0; done < total; done += batch {
		base := done
		if err := tgt.enqueue(ctx, min(batch, total-done), func(i int) string { return fmt.Sprintf("lane-%d", (base+i)%lanes) }); err != nil {
			return res, err
		}
	}
	if err := tgt.fake.wait(ctx, 10*time.Minute); err != nil {
		return res, err
	}
	res.Elapsed = tgt.fake.doneAt().Sub(start)
	res.PerSec = float64(total) / res.Elapsed.Seconds()
	err = db.InTenantTx(ctx, pool, tgt.tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `
			SELECT count(*) FROM (
			    SELECT handed_off_at < lag(handed_off_at) OVER (PARTITION BY conversation_id ORDER BY seq) AS early
			    FROM mio.outbox WHERE conversation_id LIKE 'lane-%') AS l
			WHERE early`).Scan(&res.OutOfOrder)
	})
	return res, err
}

// Print writes the figures.
func (r *LanesResult) Print(w io.Writer) {
	fmt.Fprintf(w, "mio-bench dispatch --lanes %d --per-lane %d — ordered lanes -> webhook adapter -> local fake provider (instant 200)\n",
		r.Lanes, r.PerLane)
	if r.RateLimited {
		fmt.Fprintf(w, "  account rate-limited at %.0f/s, burst %.0f: every claim takes tokens\n", float64(rateLimitedRate), float64(rateLimitedRate))
	}
	fmt.Fprintf(w, "  sends/s            %10.0f   (%d sends in %s, all queued first; target >= %s)\n",
		r.PerSec, r.Lanes*r.PerLane, r.Elapsed.Round(time.Millisecond), lanesTarget(r.Lanes))
	fmt.Fprintf(w, "  per lane           %10.0f   sends/s\n", r.PerSec/float64(r.Lanes))
	fmt.Fprintf(w, "  out of order       %10d\n", r.OutOfOrder)
	if r.ReferencePerSec > 0 {
		fmt.Fprintf(w, "reference: River no-op jobs, same count, enqueued in batches of 500\n")
		fmt.Fprintf(w, "  jobs/s             %10.0f   (%s)\n", r.ReferencePerSec, r.ReferenceElapsed.Round(time.Millisecond))
	}
}

// lanesTarget is MIO's target for the lane counts it names.
func lanesTarget(lanes int) string {
	switch {
	case lanes == 1:
		return "100"
	case lanes >= 64:
		return "2,000"
	}
	return "—"
}
