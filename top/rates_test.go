package top

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRates: per-second rates between readings; a counter that went
// down restarted from zero; a channel first seen later counts from zero.
func TestRates(t *testing.T) {
	t.Parallel()
	r := NewRates(time.Minute)
	_, ok := r.Latest("slack")
	require.False(t, ok, "one reading is no rate")
	r.Add(at, map[string]Counts{"slack": {Received: 10}})
	r.Add(at.Add(2*time.Second), map[string]Counts{"slack": {Received: 20, Sent: 4}, "discord": {Received: 6}})
	got, ok := r.Latest("slack")
	require.True(t, ok)
	require.Equal(t, Counts{Received: 5, Sent: 2}, got)
	got, _ = r.Latest("discord")
	require.Equal(t, Counts{Received: 3}, got)
	r.Add(at.Add(4*time.Second), map[string]Counts{"slack": {Received: 4, Sent: 4}, "discord": {Received: 6}})
	got, _ = r.Latest("slack")
	require.Equal(t, Counts{Received: 2}, got, "restarted process: 4 since")
	require.Equal(t, []string{"discord", "slack"}, r.Channels())

	// Columns of 20 s over the minute before the last reading: only the
	// last holds the 4 s read, the mean of 5/s and 2/s.
	series := r.Series("slack", func(c Counts) float64 { return c.Received }, 3)
	require.Equal(t, []float64{-1, -1, 3.5}, series)
	line, peak := sparkline(series)
	require.Equal(t, "  █", line)
	require.Equal(t, 3.5, peak)

	r.Add(at.Add(2*time.Minute), map[string]Counts{"slack": {Received: 4, Sent: 4}})
	require.Equal(t, []float64{0, 0, 0}, r.Series("slack", func(c Counts) float64 { return c.Received }, 3),
		"spans older than the window dropped; a long quiet span covers every column")
}
