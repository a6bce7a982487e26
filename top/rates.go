package top

import (
	"maps"
	"slices"
	"time"
)

// RateWindow is how far back the rate sparklines reach.
const RateWindow = 5 * time.Minute

// Rates turns successive readings of the counters into per-second rates
// per channel. A reading is kept as the rate over the span since the
// previous one; spans older than the window are dropped. A counter that
// went down (the process restarted) counts from zero again; a channel
// first seen after the first reading counts from zero.
type Rates struct {
	window time.Duration
	prev   map[string]Counts
	prevAt time.Time
	spans  []rateSpan // oldest first
}

// rateSpan is the per-second rate of each channel between two readings.
type rateSpan struct {
	from, to time.Time
	perSec   map[string]Counts
}

// NewRates keeps rates over window.
func NewRates(window time.Duration) *Rates {
	return &Rates{window: window}
}

// Add records the counters read at at.
func (r *Rates) Add(at time.Time, counts map[string]Counts) {
	if r.prev != nil && at.After(r.prevAt) {
		dt := at.Sub(r.prevAt).Seconds()
		s := rateSpan{from: r.prevAt, to: at, perSec: map[string]Counts{}}
		for ch, c := range counts {
			p := r.prev[ch]
			s.perSec[ch] = Counts{Received: increase(p.Received, c.Received) / dt, Sent: increase(p.Sent, c.Sent) / dt}
		}
		r.spans = append(r.spans, s)
		cut := 0
		for cut < len(r.spans) && r.spans[cut].to.Before(at.Add(-r.window)) {
			cut++
		}
		r.spans = r.spans[cut:]
	}
	r.prev, r.prevAt = counts, at
}

func increase(before, after float64) float64 {
	if after < before {
		return after
	}
	return after - before
}

// Channels are the channels counted so far, sorted.
func (r *Rates) Channels() []string {
	return slices.Sorted(maps.Keys(r.prev))
}

// Totals are the counters of the latest reading.
func (r *Rates) Totals() map[string]Counts { return r.prev }

// Latest is the channel's rate over the last span; false before two
// readings.
func (r *Rates) Latest(channel string) (Counts, bool) {
	if len(r.spans) == 0 {
		return Counts{}, false
	}
	return r.spans[len(r.spans)-1].perSec[channel], true
}

// Series divides the window ending at the latest reading into cols equal
// columns and returns the mean rate pick reads of the channel in each
// (weighted by how much of the column each span covers), -1 for a
// column no span covers.
func (r *Rates) Series(channel string, pick func(Counts) float64, cols int) []float64 {
	out := make([]float64, cols)
	width := r.window / time.Duration(max(cols, 1))
	start := r.prevAt.Add(-width * time.Duration(cols))
	for i := range out {
		b0, b1 := start.Add(width*time.Duration(i)), start.Add(width*time.Duration(i+1))
		var sum, covered float64
		for _, s := range r.spans {
			lo, hi := later(s.from, b0), earlier(s.to, b1)
			if !hi.After(lo) {
				continue
			}
			w := hi.Sub(lo).Seconds()
			sum += pick(s.perSec[channel]) * w
			covered += w
		}
		out[i] = -1
		if covered > 0 {
			out[i] = sum / covered
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// sparkLevels draw a sparkline, lowest first.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// sparkline draws series scaled to its own peak: a blank where there is
// no data, ▁ for zero, ▂ to █ for the rest.
func sparkline(series []float64) (line string, peak float64) {
	for _, v := range series {
		peak = max(peak, v)
	}
	out := make([]rune, len(series))
	for i, v := range series {
		switch {
		case v < 0:
			out[i] = ' '
		case v == 0 || peak == 0:
			out[i] = sparkLevels[0]
		default:
			out[i] = sparkLevels[1+min(int(v/peak*float64(len(sparkLevels)-1)), len(sparkLevels)-2)]
		}
	}
	return string(out), peak
}
