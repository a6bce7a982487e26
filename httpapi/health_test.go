package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/metrics"
)

// TestProbes: /livez and /healthz answer on both listeners whatever the
// schema; /readyz reports the schema check on both.
func TestProbes(t *testing.T) {
	env := dbtest.New(t)
	var schemaErr error
	api := httpapi.New(httpapi.Deps{Pool: env.Pool, Metrics: metrics.New(),
		SchemaCheck: func(context.Context) error { return schemaErr }})
	for name, h := range map[string]http.Handler{"public": api.PublicHandler(), "admin": api.AdminHandler()} {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		get := func(path string) int {
			resp, err := http.Get(srv.URL + path)
			require.NoError(t, err)
			resp.Body.Close()
			return resp.StatusCode
		}
		schemaErr = nil
		for _, p := range []string{"/livez", "/healthz", "/readyz"} {
			require.Equal(t, http.StatusOK, get(p), "%s %s", name, p)
		}
		schemaErr = errors.New("schema 12 behind 14")
		require.Equal(t, http.StatusOK, get("/livez"), name)
		require.Equal(t, http.StatusOK, get("/healthz"), name)
		require.Equal(t, http.StatusServiceUnavailable, get("/readyz"), name)
	}
}
