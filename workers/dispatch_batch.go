package workers

import (
	"context"
	"sync"
	"time"
)

// groupCommit gathers the requests of concurrent dispatch jobs into
// shared transactions: while one batch is in flight the next requests
// queue, and the next flush takes them all (up to maxBatch). At most
// flushers batches run at once. Flushes run on short-lived goroutines that
// exit when the queue is empty, so there is nothing to start or stop.
type groupCommit[In, Out any] struct {
	maxBatch int
	flushers int
	// run handles one batch and returns one result per input, in order,
	// or an error that fails the whole batch.
	run func(ctx context.Context, in []In) ([]Out, error)

	mu      sync.Mutex
	queue   []*groupCall[In, Out]
	running int
}

type groupCall[In, Out any] struct {
	ctx  context.Context
	in   In
	out  Out
	err  error
	done chan struct{}
}

func newGroupCommit[In, Out any](maxBatch, flushers int, run func(context.Context, []In) ([]Out, error)) *groupCommit[In, Out] {
	return &groupCommit[In, Out]{maxBatch: maxBatch, flushers: flushers, run: run}
}

// do submits in and waits for its result (or for ctx to end).
func (g *groupCommit[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := &groupCall[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if g.running < g.flushers {
		g.running++
		go g.flush()
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

// flush runs batches until the queue is empty.
func (g *groupCommit[In, Out]) flush() {
	for {
		g.mu.Lock()
		n := min(len(g.queue), g.maxBatch)
		if n == 0 {
			g.running--
			g.mu.Unlock()
			return
		}
		batch := make([]*groupCall[In, Out], 0, n)
		for _, c := range g.queue[:n] {
			if c.ctx.Err() == nil {
				batch = append(batch, c)
			} else {
				close(c.done) // its caller has gone
			}
		}
		g.queue = append(g.queue[:0], g.queue[n:]...)
		g.mu.Unlock()
		if len(batch) > 0 {
			g.runBatch(batch)
		}
	}
}

func (g *groupCommit[In, Out]) runBatch(batch []*groupCall[In, Out]) {
	// The batch lives as long as its latest caller would wait.
	ctx := context.Background()
	var deadline time.Time
	for _, c := range batch {
		if d, ok := c.ctx.Deadline(); ok && d.After(deadline) {
			deadline = d
		}
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	in := make([]In, len(batch))
	for i, c := range batch {
		in[i] = c.in
	}
	out, err := g.run(ctx, in)
	for i, c := range batch {
		if err != nil {
			c.err = err
		} else {
			c.out = out[i]
		}
		close(c.done)
	}
}
