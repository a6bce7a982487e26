package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/metrics"
)

// paramName matches a path parameter; routes and documents are compared
// with every parameter written {} so that names need not agree.
var paramName = regexp.MustCompile(`\{[^}]*\}`)

// routeKey is "METHOD /path/{}/…" with a trailing slash removed (chi
// reports a sub-router's "/" route as ".../").
func routeKey(method, path string) string {
	path = paramName.ReplaceAllString(path, "{}")
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	return strings.ToUpper(method) + " " + path
}

// routerRoutes walks a chi router. A route registered for every method
// (r.Handle: /metrics) counts as GET, the only method it is documented
// with.
func routerRoutes(t *testing.T, h http.Handler) []string {
	t.Helper()
	byPath := map[string][]string{}
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		byPath[route] = append(byPath[route], method)
		return nil
	})
	require.NoError(t, err)
	var out []string
	for path, methods := range byPath {
		if len(methods) >= 9 {
			methods = []string{http.MethodGet}
		}
		for _, m := range methods {
			out = append(out, routeKey(m, path))
		}
	}
	sort.Strings(out)
	return out
}

func documentRoutes(t *testing.T, doc openapi.Document) []string {
	t.Helper()
	m := openapitest.Model(t, doc)
	var out []string
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			out = append(out, routeKey(method, path))
		}
	}
	sort.Strings(out)
	return out
}

// TestOpenAPIDocumentsMatchRoutes: every route of each listener is in
// its OpenAPI document and every operation of the document is a route
// (parameter names aside); both documents are valid OpenAPI 3.1.
func TestOpenAPIDocumentsMatchRoutes(t *testing.T) {
	t.Parallel()
	api := httpapi.New(httpapi.Deps{Metrics: metrics.New()})
	for _, c := range []struct {
		doc openapi.Document
		h   http.Handler
	}{{openapi.Public, api.PublicHandler()}, {openapi.Admin, api.AdminHandler()}} {
		require.Equal(t, routerRoutes(t, c.h), documentRoutes(t, c.doc),
			"routes (expected) vs the operations of openapi/%s (actual)", c.doc)
	}
}

// TestOpenAPIServed: the documents are served as JSON without a token,
// each equal to the embedded one with the server's channels as the
// ChannelType enum, and valid by its own schema.
func TestOpenAPIServed(t *testing.T) {
	env := dbtest.New(t)
	registry := builtin.Registry(builtin.Options{})
	api := httpapi.New(httpapi.Deps{Pool: env.Pool, Metrics: metrics.New(), Registry: registry})
	for _, c := range []struct {
		doc  openapi.Document
		h    http.Handler
		path string
	}{{openapi.Public, api.PublicHandler(), "/v1/openapi.json"}, {openapi.Admin, api.AdminHandler(), "/admin/v1/openapi.json"}} {
		srv := httptest.NewServer(openapitest.Handler(t, c.doc, c.h))
		t.Cleanup(srv.Close)
		resp, err := http.Get(srv.URL + c.path)
		require.NoError(t, err)
		body := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		want, err := c.doc.JSON(registry.Types())
		require.NoError(t, err)
		require.JSONEq(t, string(want), body)
		var served struct {
			Components struct {
				Schemas struct {
					ChannelType struct {
						Enum []string `json:"enum"`
					} `json:"ChannelType"`
				} `json:"schemas"`
			} `json:"components"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &served))
		require.Equal(t, registry.Types(), served.Components.Schemas.ChannelType.Enum)
		var v struct {
			OpenAPI string `json:"openapi"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		require.Equal(t, "3.1.0", v.OpenAPI)
	}
}
