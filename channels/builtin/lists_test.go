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

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/migrations"
)

// The registry is the one source of what a channel is. The lists other
// places need are built from it; these tests hold what is left to it, so
// that a list written by hand fails naming the place (docs/architecture.md,
// "Adding a channel").

func registrySlugs() []string { return Registry(Options{}).Types() }

func sorted(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return slices.Compact(out)
}

// TestChannelListsDatabase: mio.channel_types, the foreign key of
// mio.accounts.channel_type, holds exactly the registry's channels as
// registered once `mio migrate up` has run with the registry; an account
// of each can be stored; and no CHECK constraint of the schema lists
// channel slugs.
func TestChannelListsDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	r := Registry(Options{})
	var types []migrations.ChannelType
	for _, d := range r.Describe() {
		types = append(types, migrations.ChannelType{Slug: d.Slug, DisplayName: d.DisplayName})
	}
	m := migrations.New(env.OwnerPool(t)).WithChannelTypes(types)
	_, err := m.Up(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Check(ctx))
	var registered []string
	require.NoError(t, env.Pool.QueryRow(ctx, `
		SELECT coalesce(array_agg(slug ORDER BY slug), '{}') FROM mio.channel_types WHERE registered`).Scan(&registered))
	require.Equal(t, registrySlugs(), registered, "mio.channel_types (registered) differs from the channel registry")
	tenant, _, err := db.TenantCreate(ctx, env.Pool, "lists")
	require.NoError(t, err)
	for _, slug := range registrySlugs() {
		err := db.InTenantTx(ctx, env.Pool, tenant.ID, func(tx pgx.Tx) error {
			_, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: tenant.ID, ChannelType: slug, DisplayName: slug})
			return err
		})
		require.NoError(t, err, slug)
	}

	rows, err := env.Pool.Query(ctx, `
		SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)
		FROM pg_constraint c
		WHERE c.contype = 'c' AND c.connamespace = 'mio'::regnamespace`)
	require.NoError(t, err)
	defs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([3]string, error) {
		var d [3]string
		return d, r.Scan(&d[0], &d[1], &d[2])
	})
	require.NoError(t, err)
	quoted := regexp.MustCompile(`'([a-z_]+)'`)
	for _, d := range defs {
		for _, q := range quoted.FindAllStringSubmatch(d[2], -1) {
			require.NotContains(t, registrySlugs(), q[1],
				"CHECK constraint %s on %s names a channel (reference mio.channel_types instead): %s", d[1], d[0], d[2])
		}
	}
}

// TestChannelListsOpenAPI: the YAML of both OpenAPI documents lists no
// channel slugs in an enum, and the document as served has the
// registry's slugs as the ChannelType enum.
func TestChannelListsOpenAPI(t *testing.T) {
	t.Parallel()
	known := registrySlugs()
	for _, doc := range []openapi.Document{openapi.Public, openapi.Admin} {
		b, err := doc.JSON(nil)
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(b, &v))
		walkEnums(v, "", func(path string, enum []string) {
			for _, e := range enum {
				require.NotContains(t, known, e,
					"httpapi/openapi/%s at %s: an enum lists channel slugs; reference #/components/schemas/ChannelType", doc, path)
			}
		})

		b, err = doc.JSON(known)
		require.NoError(t, err)
		var served struct {
			Components struct {
				Schemas map[string]struct {
					Enum []string `json:"enum"`
				} `json:"schemas"`
			} `json:"components"`
		}
		require.NoError(t, json.Unmarshal(b, &served))
		require.Equal(t, known, served.Components.Schemas["ChannelType"].Enum, "httpapi/openapi/%s: ChannelType", doc)
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
