package config

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the README configuration table")

const (
	tableStart = "<!-- config-table -->\n"
	tableEnd   = "<!-- /config-table -->"
)

// TestREADMEConfigurationTable keeps the README's table identical to the
// options table (`go test ./config -update` rewrites it).
func TestREADMEConfigurationTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(b)
	i := strings.Index(readme, tableStart)
	j := strings.Index(readme, tableEnd)
	require.True(t, i >= 0 && j > i, "README lacks the config-table markers")
	want := MarkdownTable()
	got := readme[i+len(tableStart) : j]
	if *update {
		readme = readme[:i+len(tableStart)] + want + readme[j:]
		require.NoError(t, os.WriteFile("../README.md", []byte(readme), 0o644))
		return
	}
	require.Equal(t, want, got, "README configuration table is stale: run go test ./config -update")
}
