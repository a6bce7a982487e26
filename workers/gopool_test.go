package workers

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// goid is the current goroutine's number, read from its stack header.
func goid() int64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	n, _ := strconv.ParseInt(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return n
}

// runOn runs f on p and returns the goroutine it ran on.
func runOn(t *testing.T, p *goPool) int64 {
	t.Helper()
	got := make(chan int64, 1)
	go p.Go(func() { got <- goid() }) // a Go that waits stalls there, not the test
	select {
	case id := <-got:
		return id
	case <-time.After(5 * time.Second):
		t.Fatal("the function did not run")
		return 0
	}
}

func TestGoPoolReusesAnIdleGoroutine(t *testing.T) {
	p := newGoPool(time.Minute)
	seen := map[int64]bool{}
	const runs = 50
	for range runs {
		seen[runOn(t, p)] = true
		// The goroutine waits for work once the function has returned;
		// give it the moment to get there. A late one only adds a
		// goroutine to the pool; without reuse every run has its own.
		time.Sleep(5 * time.Millisecond)
	}
	if len(seen) > runs/10 {
		t.Fatalf("%d runs, one after another, ran on %d goroutines", runs, len(seen))
	}
}

func TestGoPoolNeverWaitsForABusyGoroutine(t *testing.T) {
	p := newGoPool(time.Minute)
	release := make(chan struct{})
	defer close(release)
	const busy = 8
	started := make(chan struct{}, busy+1)
	go func() { // a Go that waits for a busy goroutine stalls here, not the test
		for range busy + 1 {
			p.Go(func() {
				started <- struct{}{}
				<-release
			})
		}
	}()
	for i := range busy + 1 {
		select {
		case <-started: // every one runs at once, none waits for another
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d functions started; the others wait for a busy goroutine", i, busy+1)
		}
	}
}

func TestGoPoolIdleGoroutineExits(t *testing.T) {
	p := newGoPool(20 * time.Millisecond)
	first := runOn(t, p)
	time.Sleep(200 * time.Millisecond)
	if id := runOn(t, p); id == first {
		t.Fatalf("ran on goroutine %d again after its idle time", id)
	}
}
