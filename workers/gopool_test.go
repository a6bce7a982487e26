package workers

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
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
	p.Go(func() { got <- goid() })
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
	first := runOn(t, p)
	for range 50 {
		// The goroutine waits for work once the function has returned;
		// give it the moment to get there.
		time.Sleep(5 * time.Millisecond)
		if id := runOn(t, p); id != first {
			t.Fatalf("ran on goroutine %d, want the idle %d", id, first)
		}
	}
}

func TestGoPoolNeverWaitsForABusyGoroutine(t *testing.T) {
	p := newGoPool(time.Minute)
	release := make(chan struct{})
	var wg sync.WaitGroup
	const busy = 8
	started := make(chan struct{}, busy)
	for range busy {
		wg.Add(1)
		p.Go(func() {
			defer wg.Done()
			started <- struct{}{}
			<-release
		})
	}
	for range busy {
		<-started // every one runs at once, none waits for another
	}
	id := runOn(t, p) // and one more, while all are busy
	close(release)
	wg.Wait()
	if id == 0 {
		t.Fatal("no goroutine id")
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
