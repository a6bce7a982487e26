package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Network rule for these tests: traffic only ever goes to the loopback test
// servers. 10.0.0.1 and 169.254.169.254 appear only as addresses the
// connect-time check must refuse before connect(2); TestRefused and
// TestControl pin that check down.

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// testBundle is a loopback server reachable as good.test and other.test
// (through Policy.Resolve), with evil.test and meta.test resolving to
// internal addresses.
type testBundle struct {
	srv  *httptest.Server
	port string
	hits atomic.Int64
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "landed")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/echo-auth", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("Authorization")+"|"+r.Header.Get("Cookie"))
	})
	mux.HandleFunc("/stream/{n}", func(w http.ResponseWriter, r *http.Request) {
		// No Content-Length: flush first so the body goes out chunked.
		n, _ := strconv.Atoi(r.PathValue("n"))
		w.(http.Flusher).Flush()
		chunk := strings.Repeat("x", 1000)
		for n > 0 {
			k := min(n, len(chunk))
			if _, err := io.WriteString(w, chunk[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	mux.HandleFunc("/sized/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		io.WriteString(w, strings.Repeat("y", n))
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		if ra := r.URL.Query().Get("retry_after"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(code)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	_, b.port, _ = net.SplitHostPort(b.srv.Listener.Addr().String())
	return b
}

// url builds http://host:port/path on the test server's port.
func (b *testBundle) url(host, path string) string {
	return "http://" + net.JoinHostPort(host, b.port) + path
}

func (b *testBundle) redirect(from, to string) string {
	return b.url(from, "/redirect?to="+url.QueryEscape(to))
}

func testResolve(_ context.Context, host string) ([]netip.Addr, error) {
	switch normalizeHost(host) {
	case "good.test", "other.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	case "evil.test":
		return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
	case "meta.test":
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// testPolicy permits the loopback server under its test names only.
func testPolicy() Policy {
	return Policy{AllowHTTP: true, AllowedNets: loopback, Resolve: testResolve}
}

func body(t *testing.T, resp *Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestGetOK(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, err := NewClient(testPolicy()).Get(context.Background(), b.url("good.test", "/ok"), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/plain", resp.ContentType)
	require.Equal(t, int64(2), resp.ContentLength)
	require.Equal(t, b.url("good.test", "/ok"), resp.FinalURL)
	require.Equal(t, "ok", body(t, resp))
}

func TestRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := NewClient(Policy{AllowHTTP: true})
	for _, u := range []string{
		b.url("127.0.0.1", "/ok"),
		b.url("localhost", "/ok"), // a name resolving to loopback
		b.url("::1", "/ok"),
		"http://10.0.0.1/",
		"http://169.254.169.254/computeMetadata/v1/",
		"http://[::ffff:10.0.0.1]/",
		"http://[::ffff:169.254.169.254]/",
		"http://0.0.0.0:" + b.port + "/ok",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Get(ctx, u, nil)
		cancel()
		require.ErrorIs(t, err, ErrForbiddenAddress, u)
	}
	require.Zero(t, b.hits.Load(), "the loopback server saw no request")
}

func TestResolvedNamesCheckedAtDial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := NewClient(testPolicy())
	for _, host := range []string{"evil.test", "meta.test"} {
		_, err := c.Get(context.Background(), b.url(host, "/ok"), nil)
		require.ErrorIs(t, err, ErrForbiddenAddress, host)
	}
	// The allowed name still works through the same client.
	resp, err := c.Get(context.Background(), b.url("good.test", "/ok"), nil)
	require.NoError(t, err)
	require.Equal(t, "ok", body(t, resp))
}

func TestRedirectToInternalAddressRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := NewClient(testPolicy())
	for _, target := range []string{b.url("evil.test", "/ok"), "http://169.254.169.254/latest/meta-data/", b.url("127.0.0.1", "/ok")} {
		resp, err := c.Get(context.Background(), b.redirect("good.test", target), nil)
		if target == b.url("127.0.0.1", "/ok") {
			// AllowedNets covers 127.0.0.0/8 however it is reached.
			require.NoError(t, err)
			require.Equal(t, "ok", body(t, resp))
			continue
		}
		require.ErrorIs(t, err, ErrForbiddenAddress, target)
	}
}

func TestSchemes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := NewClient(Policy{AllowedNets: loopback, Resolve: testResolve})
	for _, u := range []string{b.url("good.test", "/ok"), "ftp://good.test/x", "file:///etc/passwd", "gopher://good.test/"} {
		_, err := c.Get(context.Background(), u, nil)
		require.ErrorIs(t, err, ErrForbiddenScheme, u)
	}
	require.Zero(t, b.hits.Load())

	// Redirecting from an allowed http URL to a forbidden scheme.
	_, err := NewClient(testPolicy()).Get(context.Background(), b.redirect("good.test", "ftp://good.test/x"), nil)
	require.ErrorIs(t, err, ErrForbiddenScheme)
}

func TestHTTPS(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/downgrade" {
			http.Redirect(w, r, "http://"+r.Host+"/ok", http.StatusFound)
			return
		}
		io.WriteString(w, "secure")
	}))
	t.Cleanup(srv.Close)
	c := NewClient(Policy{AllowedNets: loopback})
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c.hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}

	resp, err := c.Get(context.Background(), srv.URL+"/file", nil)
	require.NoError(t, err)
	require.Equal(t, "secure", body(t, resp))

	_, err = c.Get(context.Background(), srv.URL+"/downgrade", nil)
	require.ErrorIs(t, err, ErrForbiddenScheme, "https -> http redirect")
	require.Equal(t, int64(2), hits.Load())
}

func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := testPolicy()
	p.AllowedHosts = []string{"good.test", "*.other.test"}
	c := NewClient(p)

	_, err := c.Get(context.Background(), b.url("other.test", "/ok"), nil)
	require.ErrorIs(t, err, ErrForbiddenHost, "*.other.test does not match the apex")
	_, err = c.Get(context.Background(), b.url("127.0.0.1", "/ok"), nil)
	require.ErrorIs(t, err, ErrForbiddenHost, "IP literals are hosts too")
	require.Zero(t, b.hits.Load())

	resp, err := c.Get(context.Background(), b.url("GOOD.test.", "/ok"), nil)
	require.NoError(t, err)
	require.Equal(t, "ok", body(t, resp))

	_, err = c.Get(context.Background(), b.redirect("good.test", b.url("other.test", "/ok")), nil)
	require.ErrorIs(t, err, ErrForbiddenHost, "redirect targets are checked too")
}

func TestHostAllowed(t *testing.T) {
	t.Parallel()
	p := Policy{AllowedHosts: []string{"*.Slack.com", "api.telegram.org.", " cdn.discordapp.com "}}.withDefaults()
	for host, want := range map[string]bool{
		"files.slack.com":     true,
		"a.b.slack.com":       true,
		"slack.com":           false,
		"evilslack.com":       false,
		"slack.com.evil.test": false,
		"api.telegram.org":    true,
		"x.api.telegram.org":  false,
		"cdn.discordapp.com":  true,
	} {
		require.Equal(t, want, p.hostAllowed(host), host)
	}
	require.True(t, Policy{}.hostAllowed("anything.example"), "empty list allows any host")
}

func TestRedirectLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		max  int
		hops int
		ok   bool
	}{
		{0, 3, true}, // default 3
		{0, 4, false},
		{5, 5, true},
		{5, 6, false},
		{-1, 0, true}, // negative: follow none
		{-1, 1, false},
	} {
		p := testPolicy()
		p.MaxRedirects = tc.max
		resp, err := NewClient(p).Get(context.Background(), b.url("good.test", fmt.Sprintf("/hop/%d", tc.hops)), nil)
		if !tc.ok {
			require.ErrorIs(t, err, ErrTooManyRedirects, "%+v", tc)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		require.Equal(t, "landed", body(t, resp))
		require.Equal(t, b.url("good.test", "/hop/0"), resp.FinalURL)
	}
}

func TestAuthorizationNotSentCrossHost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := NewClient(testPolicy())
	header := http.Header{"Authorization": {"Bearer xoxb-secret"}, "Cookie": {"c=1"}}
	for _, tc := range []struct {
		name, url, want string
	}{
		{"Direct", b.url("good.test", "/echo-auth"), "Bearer xoxb-secret|c=1"},
		{"SameHost", b.redirect("good.test", "/echo-auth"), "Bearer xoxb-secret|c=1"},
		{"OtherHost", b.redirect("good.test", b.url("other.test", "/echo-auth")), "|"},
		{"OtherHostThenBack", b.redirect("good.test", b.redirect("other.test", b.url("good.test", "/echo-auth"))), "|"},
	} {
		resp, err := c.Get(context.Background(), tc.url, header)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, body(t, resp), tc.name)
	}
	require.Equal(t, []string{"Bearer xoxb-secret"}, header["Authorization"], "caller's header untouched")

	// Another port or scheme is another host (no second listener needed).
	u := func(s string) *url.URL { v, _ := url.Parse(s); return v }
	require.True(t, sameHost(u("https://Files.Slack.com/a"), u("https://files.slack.com./b")))
	require.False(t, sameHost(u("https://files.slack.com/a"), u("https://files.slack.com:8443/a")))
	require.False(t, sameHost(u("https://files.slack.com/a"), u("http://files.slack.com/a")))
}

func TestSizeCapWhileStreaming(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := testPolicy()
	p.MaxBytes = 64 << 10
	c := NewClient(p)

	resp, err := c.Get(context.Background(), b.url("good.test", fmt.Sprintf("/stream/%d", p.MaxBytes+5000)), nil)
	require.NoError(t, err)
	require.Equal(t, int64(-1), resp.ContentLength, "no Content-Length: caught while streaming")
	got, err := io.ReadAll(resp.Body)
	require.ErrorIs(t, err, ErrTooLarge)
	require.LessOrEqual(t, int64(len(got)), p.MaxBytes)
	_, err = resp.Body.Read(make([]byte, 10))
	require.ErrorIs(t, err, ErrTooLarge, "sticky")
	require.NoError(t, resp.Body.Close())

	resp, err = c.Get(context.Background(), b.url("good.test", fmt.Sprintf("/stream/%d", p.MaxBytes)), nil)
	require.NoError(t, err)
	require.Len(t, body(t, resp), int(p.MaxBytes), "exactly MaxBytes is fine")
}

func TestSizeCapFromContentLength(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := testPolicy()
	p.MaxBytes = 1000
	c := NewClient(p)
	_, err := c.Get(context.Background(), b.url("good.test", "/sized/1001"), nil)
	require.ErrorIs(t, err, ErrTooLarge)

	resp, err := c.Get(context.Background(), b.url("good.test", "/sized/1000"), nil)
	require.NoError(t, err)
	require.Equal(t, int64(1000), resp.ContentLength)
	require.Len(t, body(t, resp), 1000)
}

func TestLimitedBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size, limit int
		tooLarge    bool
	}{{0, 0, false}, {1, 0, true}, {10, 10, false}, {11, 10, true}, {100000, 10, true}} {
		lb := &limitedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("z", tc.size))), left: int64(tc.limit)}
		got, err := io.ReadAll(lb)
		if tc.tooLarge {
			require.ErrorIs(t, err, ErrTooLarge, "%+v", tc)
			require.Len(t, got, tc.limit)
		} else {
			require.NoError(t, err, "%+v", tc)
			require.Len(t, got, tc.size)
		}
	}
}

func TestStatusError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := NewClient(testPolicy())
	for _, tc := range []struct {
		path       string
		code       int
		retryable  bool
		retryAfter time.Duration
	}{
		{"/status/404", 404, false, 0},
		{"/status/403", 403, false, 0},
		{"/status/500", 500, true, 0},
		{"/status/503?retry_after=3", 503, true, 3 * time.Second},
		{"/status/429?retry_after=7", 429, true, 7 * time.Second},
	} {
		_, err := c.Get(context.Background(), b.url("good.test", tc.path), nil)
		var se *StatusError
		require.True(t, errors.As(err, &se), "%s: %v", tc.path, err)
		require.Equal(t, tc.code, se.Code)
		require.Equal(t, tc.retryable, se.Retryable)
		require.Equal(t, tc.retryAfter, se.RetryAfter)
	}

	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.Equal(t, 30*time.Second, parseRetryAfter(now.Add(30*time.Second).Format(http.TimeFormat), now))
	require.Zero(t, parseRetryAfter("soon", now))
	require.Zero(t, parseRetryAfter("-5", now))
}

func TestErrorsDoNotLeakURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := NewClient(testPolicy())
	for _, u := range []string{
		b.url("good.test", "/status/404/bot123:SECRET/doc.pdf"),
		b.url("evil.test", "/file/bot123:SECRET/doc.pdf"),
		b.url("nowhere.test", "/file/bot123:SECRET/doc.pdf"),
	} {
		_, err := c.Get(context.Background(), u, nil)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "SECRET", u)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := testPolicy()
	p.Timeout = 200 * time.Millisecond
	_, err := NewClient(p).Get(context.Background(), b.url("good.test", "/hang"), nil)
	var nerr net.Error
	require.True(t, errors.As(err, &nerr) && nerr.Timeout(), "%v", err)
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	p := Policy{}.withDefaults()
	require.Equal(t, int64(25<<20), p.MaxBytes)
	require.Equal(t, 60*time.Second, p.Timeout)
	require.Equal(t, 3, p.MaxRedirects)
}

// TestInternalHosts: a host named in InternalHosts reaches a loopback
// address (by name or as an IP literal); every other name is still
// checked at dial time.
func TestInternalHosts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := NewClient(Policy{AllowHTTP: true, InternalHosts: []string{"Good.Test", "127.0.0.1"}, Resolve: testResolve})
	for _, u := range []string{b.url("good.test", "/ok"), b.url("127.0.0.1", "/ok")} {
		resp, err := c.Get(context.Background(), u, nil)
		require.NoError(t, err, u)
		require.Equal(t, "ok", body(t, resp))
	}
	_, err := c.Get(context.Background(), b.url("other.test", "/ok"), nil)
	require.ErrorIs(t, err, ErrForbiddenAddress, "another name for the same address stays refused")
	_, err = c.Get(context.Background(), b.redirect("good.test", b.url("other.test", "/ok")), nil)
	require.ErrorIs(t, err, ErrForbiddenAddress, "a redirect elsewhere is checked")
}

// TestWithHost: the derived client allows one more host (and plain http
// to it) without changing the original.
func TestWithHost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := testPolicy()
	p.AllowHTTP = false
	p.AllowedHosts = []string{"good.test"}
	c := NewClient(p)
	d := c.WithHost("other.test", true)

	resp, err := d.Get(context.Background(), b.url("other.test", "/ok"), nil)
	require.NoError(t, err)
	require.Equal(t, "ok", body(t, resp))
	_, err = d.Get(context.Background(), b.url("good.test", "/ok"), nil)
	require.ErrorIs(t, err, ErrForbiddenScheme, "plain http only to the added host")

	_, err = c.Get(context.Background(), b.url("other.test", "/ok"), nil)
	require.ErrorIs(t, err, ErrForbiddenScheme, "the original is unchanged")
	_, err = c.WithHost("other.test", false).Get(context.Background(), b.url("other.test", "/ok"), nil)
	require.ErrorIs(t, err, ErrForbiddenScheme)
}
