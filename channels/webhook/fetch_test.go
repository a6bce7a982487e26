package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

func TestFetch(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.txt":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "hello")
		case "/server-error":
			w.WriteHeader(http.StatusBadGateway)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// files.example.test resolves to the loopback fake: refused unless the
	// policy allows that range, like any private address.
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	url := "http://files.example.test:" + port
	ch := New(Options{})

	tests := []struct {
		name      string
		policy    fetch.Policy
		path      string
		want      string
		permanent bool
		transient bool
	}{
		{name: "Allowed", policy: fetch.Policy{AllowHTTP: true, Resolve: resolve, AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, path: "/ok.txt", want: "hello"},
		{name: "PrivateAddressRefused", policy: fetch.Policy{AllowHTTP: true, Resolve: resolve}, path: "/ok.txt", permanent: true},
		{name: "HTTPRefused", policy: fetch.Policy{Resolve: resolve, AllowPrivate: true}, path: "/ok.txt", permanent: true},
		{name: "NotFoundIsPermanent", policy: fetch.Policy{AllowHTTP: true, AllowPrivate: true, Resolve: resolve}, path: "/missing", permanent: true},
		{name: "BadGatewayIsTransient", policy: fetch.Policy{AllowHTTP: true, AllowPrivate: true, Resolve: resolve}, path: "/server-error", transient: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := ch.Fetch(context.Background(), channels.Account{}, envelope.Attachment{Source: &envelope.AttachmentSource{URL: url + tc.path}}, fetch.NewClient(tc.policy))
			switch {
			case tc.permanent:
				var pe *channels.PermanentError
				require.True(t, errors.As(err, &pe), "%v", err)
			case tc.transient:
				var te *channels.TransientError
				require.True(t, errors.As(err, &te), "%v", err)
			default:
				require.NoError(t, err)
				defer f.Body.Close()
				b, err := io.ReadAll(f.Body)
				require.NoError(t, err)
				require.Equal(t, tc.want, string(b))
			}
		})
	}
}
