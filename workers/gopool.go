package workers

import "time"

// goPool runs functions on goroutines that outlive them: a function
// starts at once, on an idle goroutine of the pool when one is waiting,
// else on a new one, and a goroutine that finds no work for idle exits.
//
// It exists for the dispatcher's sends. A send runs net/http's client,
// the adapter's encoding and signing: a goroutine started for it grows
// its stack by copying, several times, on every send (9 % of the
// server's CPU in `mio-bench dispatch`, docs/benchmarks.md, twentieth
// stop). A kept goroutine keeps its grown stack until the collector
// shrinks it while it is idle.
//
// It bounds nothing: as many goroutines run as there are functions in
// flight, as with the go statement it replaces.
type goPool struct {
	work chan func()
	idle time.Duration
}

func newGoPool(idle time.Duration) *goPool {
	return &goPool{work: make(chan func()), idle: idle}
}

// Go runs f on a goroutine of the pool, never waiting for one.
func (p *goPool) Go(f func()) {
	select {
	case p.work <- f:
	default:
		go p.run(f)
	}
}

func (p *goPool) run(f func()) {
	f()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
}
