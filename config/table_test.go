package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMEConfigurationTable keeps the README's table in step with the
// options: every environment variable and its default must appear.
func TestREADMEConfigurationTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(b)
	for _, row := range Table() {
		env := strings.Split(row[0], ",")[0]
		env = strings.TrimSpace(strings.TrimSuffix(env, " (or `_FILE`)"))
		line := ""
		for _, l := range strings.Split(readme, "\n") {
			if strings.HasPrefix(l, "| `"+env+"`") {
				line = l
			}
		}
		require.NotEmpty(t, line, "README configuration table lacks %s", env)
		require.Contains(t, line, "`"+row[1]+"`", "README row for %s lacks its flag", env)
		if row[2] != "" {
			require.Contains(t, line, "`"+row[2]+"`", "README row for %s lacks its default %q", env, row[2])
		}
	}
}
