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
