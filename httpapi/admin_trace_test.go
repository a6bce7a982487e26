package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/metrics"
)

// TestAdminListenerTraced: with tracing on, an admin request is a server
// span named after its route, continuing the caller's traceparent, whose
// attributes hold neither the tenant id of its path nor the admin token;
// a refused request is traced too, metrics scrapes and probes are not.
func TestAdminListenerTraced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), TracerProvider: tp,
		Admin: b.svc.WithRegistry(builtin.Registry(builtin.Options{}))})
	adm := httptest.NewServer(api.AdminHandler())
	t.Cleanup(adm.Close)
	viewer := (&adminAPI{testBundle: b, adm: adm}).token(t, "viewer")

	caller := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	get := func(path, token string) int {
		req, err := http.NewRequest(http.MethodGet, adm.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("traceparent", caller)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get("/admin/v1/tenants/"+b.tenant.String(), viewer))
	require.Equal(t, http.StatusUnauthorized, get("/admin/v1/tenants/"+b.tenant.String()+"/accounts", ""))
	require.Equal(t, http.StatusOK, get("/metrics", ""))
	require.Equal(t, http.StatusOK, get("/livez", ""))

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
		for _, a := range s.Attributes() {
			v := a.Value.String()
			require.NotContains(t, v, b.tenant.String(), "span %q attribute %s", s.Name(), a.Key)
			require.NotContains(t, v, viewer, "span %q attribute %s", s.Name(), a.Key)
		}
	}
	require.Len(t, byName, 2, "two admin requests traced, not the scrape or the probe: %v", byName)
	for _, name := range []string{"GET /admin/v1/tenants/{tenant_id}", "GET /admin/v1/tenants/{tenant_id}/accounts"} {
		s := byName[name]
		require.NotNil(t, s, name)
		require.Equal(t, trace.SpanKindServer, s.SpanKind())
		require.Equal(t, caller[3:35], s.Parent().TraceID().String(), "the caller's trace is continued")
		route := ""
		for _, a := range s.Attributes() {
			if a.Key == "http.route" {
				route = a.Value.AsString()
			}
		}
		require.Equal(t, strings.TrimPrefix(name, "GET "), route)
	}
}
