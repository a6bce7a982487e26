package metrics

import (
	"fmt"
	"testing"
)

func TestCapLabels(t *testing.T) {
	t.Parallel()
	small := map[string]float64{"a": 1, "b": 2}
	if got := CapLabels(small, 2); len(got) != 2 || got["b"] != 2 {
		t.Fatalf("under the cap: %v", got)
	}
	many := map[string]float64{}
	for i := range 10 {
		many[fmt.Sprint("c", i)] = float64(i)
	}
	got := CapLabels(many, 3)
	want := map[string]float64{"c9": 9, "c8": 8, "c7": 7, OtherConsumers: 0 + 1 + 2 + 3 + 4 + 5 + 6}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
