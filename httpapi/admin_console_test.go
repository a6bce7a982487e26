package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/metrics"
)

// TestAdminListenerMountsConsole: the console answers / and the paths no
// admin route takes, behind the allow-list; the admin routes keep theirs.
func TestAdminListenerMountsConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "console "+r.URL.Path) })
	serve := func(allow ...netip.Prefix) *httptest.Server {
		srv := httptest.NewServer(httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(), Admin: b.svc,
			AdminAllowCIDRs: allow, Console: console}).AdminHandler())
		t.Cleanup(srv.Close)
		return srv
	}
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	srv := serve()
	for _, p := range []string{"/", "/login", "/dead-letters", "/static/console.css"} {
		status, body := get(srv.URL + p)
		require.Equal(t, http.StatusOK, status, p)
		require.Equal(t, "console "+p, body)
	}
	status, body := get(srv.URL + "/metrics")
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, body, "console")
	status, _ = get(srv.URL + "/admin/v1/tenants")
	require.Equal(t, http.StatusUnauthorized, status, "the admin API keeps its routes")

	other := serve(netip.MustParsePrefix("10.0.0.0/8"))
	status, _ = get(other.URL + "/")
	require.Equal(t, http.StatusForbidden, status, "the console is behind MIO_ADMIN_ALLOW_CIDRS")
}
