package groupcommit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/miohq/mio/groupcommit"
)

// recorder is a commit Func that records its batches and refuses any
// batch holding a negative request.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	fail    error
}

var errNegative = errors.New("negative")

func (r *recorder) commit(_ context.Context, reqs []int) ([]groupcommit.Outcome[int], error) {
	r.mu.Lock()
	r.batches = append(r.batches, append([]int(nil), reqs...))
	r.mu.Unlock()
	if r.fail != nil {
		return nil, r.fail
	}
	outs := make([]groupcommit.Outcome[int], len(reqs))
	for i, v := range reqs {
		if v < 0 {
			return nil, errNegative
		}
		if v == 0 {
			outs[i].Err = errors.New("zero refused alone")
			continue
		}
		outs[i].Res = v * 10
	}
	return outs, nil
}

func TestBatchesAndPerRequestFallback(t *testing.T) {
	rec := &recorder{}
	c := groupcommit.New(rec.commit, groupcommit.Config{Window: 50 * time.Millisecond, MaxBatch: 100, Flushers: 1})
	c.Start()
	defer c.Stop()

	inputs := []int{1, 2, -3, 4, 0, 6}
	type answer struct {
		res int
		err error
	}
	answers := make([]answer, len(inputs))
	var wg sync.WaitGroup
	for i, v := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Do(context.Background(), v)
			answers[i] = answer{res, err}
		}()
	}
	wg.Wait()
	for i, v := range inputs {
		a := answers[i]
		switch {
		case v < 0:
			if !errors.Is(a.err, errNegative) {
				t.Errorf("request %d: err %v, want the culprit's own error", v, a.err)
			}
		case v == 0:
			if a.err == nil || errors.Is(a.err, errNegative) {
				t.Errorf("request 0: err %v, want its per-request refusal", a.err)
			}
		default:
			if a.err != nil || a.res != v*10 {
				t.Errorf("request %d: (%d, %v), want (%d, nil): a bad batch-mate must not fail it", v, a.res, a.err, v*10)
			}
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.batches[0]) < 2 {
		t.Errorf("first batch %v: concurrent requests were not gathered", rec.batches[0])
	}
	// The failed batch, then one batch per request of it.
	if len(rec.batches) < 1+len(rec.batches[0]) {
		t.Errorf("batches %v: want the failed batch retried request by request", rec.batches)
	}
}

func TestUnavailableFailsTheBatchAtOnce(t *testing.T) {
	down := errors.New("database down")
	rec := &recorder{fail: down}
	c := groupcommit.New(rec.commit, groupcommit.Config{Window: 50 * time.Millisecond, Flushers: 1,
		Unavailable: func(err error) bool { return errors.Is(err, down) }})
	c.Start()
	defer c.Stop()
	var wg sync.WaitGroup
	for v := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Do(context.Background(), v+1); !errors.Is(err, down) {
				t.Errorf("request %d: err %v, want %v", v+1, err, down)
			}
		}()
	}
	wg.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := 0
	for _, b := range rec.batches {
		n += len(b)
	}
	if n != 5 {
		t.Errorf("commit saw %d requests in %v, want each once (no per-request retry when unavailable)", n, rec.batches)
	}
}

func TestStopRefusesNewRequests(t *testing.T) {
	rec := &recorder{}
	c := groupcommit.New(rec.commit, groupcommit.Config{})
	c.Start()
	if res, err := c.Do(context.Background(), 7); err != nil || res != 70 {
		t.Fatalf("Do = (%d, %v), want (70, nil)", res, err)
	}
	c.Stop()
	if _, err := c.Do(context.Background(), 8); !errors.Is(err, groupcommit.ErrStopped) {
		t.Fatalf("Do after Stop: err %v, want ErrStopped", err)
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	block := make(chan struct{})
	c := groupcommit.New(func(ctx context.Context, reqs []int) ([]groupcommit.Outcome[int], error) {
		<-block
		return make([]groupcommit.Outcome[int], len(reqs)), nil
	}, groupcommit.Config{Flushers: 1})
	c.Start()
	defer c.Stop()
	defer close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Do(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do: err %v, want the caller's deadline", err)
	}
}

// gated is a commit Func whose calls each block until released: started
// receives each call's batch, release lets the oldest blocked call
// answer.
type gated struct {
	started chan []int
	release chan struct{}
	done    chan struct{} // closed at the test's end: every call answers
}

func newGated() *gated {
	return &gated{started: make(chan []int, 100), release: make(chan struct{}, 100), done: make(chan struct{})}
}

// end lets every call answer: defer it after the Committer's Stop, so a
// failed test does not leave Stop waiting on a blocked call.
func (g *gated) end() { close(g.done) }

func (g *gated) commit(_ context.Context, reqs []int) ([]groupcommit.Outcome[int], error) {
	g.started <- append([]int(nil), reqs...)
	select {
	case <-g.release:
	case <-g.done:
	}
	outs := make([]groupcommit.Outcome[int], len(reqs))
	for i, v := range reqs {
		outs[i].Res = v * 10
	}
	return outs, nil
}

func (g *gated) waitStarted(t *testing.T) []int {
	t.Helper()
	select {
	case b := <-g.started:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("no transaction started")
		return nil
	}
}

// doAsync submits v and returns where its answer arrives.
func doAsync(c *groupcommit.Committer[int, int], v int) <-chan error {
	done := make(chan error, 1)
	go func() {
		res, err := c.Do(context.Background(), v)
		if err == nil && res != v*10 {
			err = errors.New("wrong result")
		}
		done <- err
	}()
	return done
}

// While the recent transactions carry few requests, a request that
// arrives with every regular flusher busy starts a burst transaction.
func TestBurstFlusherWhileBatchesAreSmall(t *testing.T) {
	g := newGated()
	c := groupcommit.New(g.commit, groupcommit.Config{Window: time.Millisecond, Flushers: 1, BurstFlushers: 1})
	c.Start()
	defer c.Stop()
	defer g.end()
	first := doAsync(c, 1)
	g.waitStarted(t)
	second := doAsync(c, 2)
	if b := g.waitStarted(t); len(b) != 1 || b[0] != 2 {
		t.Fatalf("burst transaction %v, want [2]", b)
	}
	g.release <- struct{}{}
	g.release <- struct{}{}
	for _, done := range []<-chan error{first, second} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// Once the recent transactions carry more than SmallBatch requests, only
// Flushers run at once: requests that arrive meanwhile wait in the queue,
// and the flusher that takes the freed slot gathers them all into its
// transaction.
func TestNoBurstFlusherWhileBatchesAreLarge(t *testing.T) {
	g := newGated()
	c := groupcommit.New(g.commit, groupcommit.Config{Window: 30 * time.Millisecond, Flushers: 1, BurstFlushers: 1, SmallBatch: 2})
	c.Start()
	defer c.Stop()
	defer g.end()

	// A large batch: one flusher holds request 1 while the other gathers
	// 20 requests in its window (the average starts at 0, so the burst
	// transaction may run).
	var warm []<-chan error
	warm = append(warm, doAsync(c, 1))
	g.waitStarted(t)
	for v := range 20 {
		warm = append(warm, doAsync(c, 100+v))
	}
	if b := g.waitStarted(t); len(b) != 20 {
		t.Fatalf("second transaction carried %d requests, want the 20 gathered", len(b))
	}
	g.release <- struct{}{}
	g.release <- struct{}{}
	for _, done := range warm {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Average now (1/8, then +(20-1/8)/8) ≈ 2.6 > SmallBatch.

	first := doAsync(c, 2)
	g.waitStarted(t)
	second := doAsync(c, 3)
	time.Sleep(100 * time.Millisecond) // well past the window
	third := doAsync(c, 4)
	select {
	case b := <-g.started:
		t.Fatalf("transaction %v started beside a busy flusher although recent batches are large", b)
	case <-time.After(100 * time.Millisecond):
	}
	g.release <- struct{}{}
	if b := g.waitStarted(t); len(b) != 2 {
		t.Fatalf("next transaction %v, want requests 3 and 4 (queued while the slot was taken)", b)
	}
	g.release <- struct{}{}
	for _, done := range []<-chan error{first, second, third} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoWindowTakesWhatIsQueued: with a negative Window a flusher does
// not wait for more requests: a lone request commits alone at once, and
// the requests that queued while a batch was in flight go together in the
// next.
func TestNoWindowTakesWhatIsQueued(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	commit := func(_ context.Context, reqs []int) ([]groupcommit.Outcome[int], error) {
		mu.Lock()
		batches = append(batches, append([]int(nil), reqs...))
		first := len(batches) == 1
		mu.Unlock()
		if first {
			<-release // the first batch is in flight while the others queue
		}
		return make([]groupcommit.Outcome[int], len(reqs)), nil
	}
	c := groupcommit.New(commit, groupcommit.Config{Window: -1, MaxBatch: 10, Flushers: 1})
	c.Start()
	defer c.Stop()

	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = c.Do(context.Background(), 1) }()
	for {
		mu.Lock()
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for v := 2; v <= 4; v++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = c.Do(context.Background(), v) }()
	}
	time.Sleep(20 * time.Millisecond) // the three queue behind the first batch
	close(release)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 2 || len(batches[0]) != 1 || len(batches[1]) != 3 {
		t.Fatalf("batches %v, want [[1] [2 3 4]]", batches)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("took %s", took)
	}
}
