package migrations_test

import (
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/migrations"
)

// TestWhereLogicLivesIsComplete: docs/architecture.md "Where logic lives"
// has a row for every function file, and names no function without one.
func TestWhereLogicLivesIsComplete(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/architecture.md")
	require.NoError(t, err)
	const heading = "\n## Where logic lives\n"
	start := strings.Index(string(doc), heading)
	require.GreaterOrEqual(t, start, 0, "no section Where logic lives")
	section := string(doc[start+len(heading):])
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|").FindAllStringSubmatch(section, -1) {
		rows = append(rows, m[1])
	}
	files, err := fs.Glob(migrations.FS(), "functions/*.sql")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(path.Base(f), ".sql"))
	}
	slices.Sort(rows)
	slices.Sort(names)
	require.Equal(t, names, rows)
}
