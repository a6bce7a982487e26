package top

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSortByBacklog: largest pending first, then the oldest pending,
// then tenant and name.
func TestSortByBacklog(t *testing.T) {
	t.Parallel()
	cs := []Consumer{
		{TenantID: "b", Name: "x", Pending: 1},
		{TenantID: "a", Name: "y", Pending: 0},
		{TenantID: "a", Name: "z", Pending: 50},
		{TenantID: "a", Name: "w", Pending: 1, OldestPendingAge: time.Hour},
		{TenantID: "a", Name: "v", Pending: 1},
	}
	SortByBacklog(cs)
	var got []string
	for _, c := range cs {
		got = append(got, c.TenantID+"/"+c.Name)
	}
	require.Equal(t, []string{"a/z", "a/w", "a/v", "b/x", "a/y"}, got)
}
