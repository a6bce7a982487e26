package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/httpapi/openapi"
)

// The registry is the one source of what a channel is. These tests hold
// every other list of channel slugs to it, so adding a channel without
// updating one fails naming the place (docs/architecture.md, "Adding a
// channel").

func registrySlugs() []string { return Registry(Options{}).Types() }

func sorted(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return slices.Compact(out)
}

// TestChannelListsEnvelope: envelope.ChannelTypes.
func TestChannelListsEnvelope(t *testing.T) {
	t.Parallel()
	require.Equal(t, registrySlugs(), sorted(envelope.ChannelTypes()),
		"envelope.ChannelTypes (envelope) differs from the channel registry (channels/builtin)")
}

// TestChannelListsDatabase: every CHECK constraint on a channel_type
// column of the migrated schema.
func TestChannelListsDatabase(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	rows, err := env.Pool.Query(context.Background(), `
		SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)
		FROM pg_constraint c
		WHERE c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE '%channel_type%'`)
	require.NoError(t, err)
	defer rows.Close()
	quoted := regexp.MustCompile(`'([a-z_]+)'`)
	n := 0
	for rows.Next() {
		var table, name, def string
		require.NoError(t, rows.Scan(&table, &name, &def))
		var slugs []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			slugs = append(slugs, m[1])
		}
		require.Equal(t, registrySlugs(), sorted(slugs),
			"CHECK constraint %s on %s (add a migration that replaces it) differs from the channel registry: %s", name, table, def)
		n++
	}
	require.NoError(t, rows.Err())
	require.NotZero(t, n, "no CHECK constraint on channel_type found")
}

// TestChannelListsOpenAPI: the ChannelType schema of both OpenAPI
// documents, and any other enum that lists channel slugs.
func TestChannelListsOpenAPI(t *testing.T) {
	t.Parallel()
	known := registrySlugs()
	for _, doc := range []openapi.Document{openapi.Public, openapi.Admin} {
		b, err := doc.JSON()
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(b, &v))
		schemas := v.(map[string]any)["components"].(map[string]any)["schemas"].(map[string]any)
		ct, ok := schemas["ChannelType"].(map[string]any)
		require.True(t, ok, "httpapi/openapi/%s has no ChannelType schema", doc)
		require.NotNil(t, ct["enum"], "httpapi/openapi/%s: ChannelType has no enum", doc)
		walkEnums(v, "", func(path string, enum []string) {
			hits := 0
			for _, e := range enum {
				if slices.Contains(known, e) {
					hits++
				}
			}
			if hits >= 2 {
				require.Equal(t, known, sorted(enum),
					"httpapi/openapi/%s at %s: the channel_type enum differs from the channel registry", doc, path)
			}
		})
	}
}

func walkEnums(v any, path string, f func(path string, enum []string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if k == "enum" {
				var enum []string
				for _, e := range c.([]any) {
					if s, ok := e.(string); ok {
						enum = append(enum, s)
					}
				}
				f(path, enum)
				continue
			}
			walkEnums(c, path+"/"+k, f)
		}
	case []any:
		for _, c := range v {
			walkEnums(c, path, f)
		}
	}
}

// TestChannelListsText: hand-written lists of slugs in the CLI's help
// (cmd/mio) and the console (console, its templates): any run of two or
// more slugs separated by commas, pipes or slashes must name them all.
// The CLI's --channel help and the console's channel choices are built
// from the registry and hold no such list.
func TestChannelListsText(t *testing.T) {
	t.Parallel()
	known := registrySlugs()
	slug := `(?:` + strings.Join(known, "|") + `)`
	run := regexp.MustCompile(`\b` + slug + `\b(?:\s*[,|/]\s*(?:and\s+|or\s+)?\b` + slug + `\b)+`)
	word := regexp.MustCompile(slug)
	var files []string
	for _, pat := range []string{"../../cmd/mio/*.go", "../../console/*.go", "../../console/templates/*.html"} {
		m, err := filepath.Glob(pat)
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.NotEmpty(t, files)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range run.FindAllString(string(b), -1) {
			require.Equal(t, known, sorted(word.FindAllString(m, -1)),
				"%s lists channels %q: name every channel of the registry or build the list from it", strings.TrimPrefix(f, "../../"), m)
		}
	}
}
